"""Header rule kind `ThreadSession`: a root session id, the requesting thread's id, a
parent thread id, and a JSON header repeating them (the shape Codex CLI sends).

What the kind reads (names declared by the harness profile):
- `session`: the root thread id, kept by every child;
- `thread`: the thread making the request (equal to `session` on the root);
- `parent`: children only, the spawning thread;
- `metadata`: a header holding a JSON object that repeats the session, thread and parent
  ids under its own keys, a label (`label_key`, never a key) and install-scoped ids
  (`install_scoped`);
- `labels`: headers kept as evidence only.

Rules kept:
- The caller is its thread: participant key = the thread id. Thread ids are unique across
  sessions, so a thread key needs no session prefix, and a child's parent key (the
  parent's thread id) is exactly what the parent's own requests derive, at any depth.
- Root iff thread == session; a parent named on a root thread is rejected.
- Each id may come from the header and from the metadata; when both are sent they must
  agree, else the id is ambiguous and not used (a conflicting parent costs the lineage;
  a conflicting session costs the identity).
- A child with no parent named keeps parent None: the root is not assumed, since at
  depth two it would be wrong.
- Install-scoped ids in the metadata never key anything and are not copied into evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from roller.identity.evidence import ABSENT, BodyPath, Evidence, Field, dig
from roller.identity.gating import REASON_INSTALL_SCOPED
from roller.identity.keys import Keys, child, root, unknown_role
from roller.identity.wire_identity import IdentityRule

REASON_ROOT_WITH_PARENT: Final = "a root thread (thread-id equals session-id) has no parent"
REASON_SELF_PARENT: Final = "names the caller itself as its parent"


@dataclass(frozen=True, slots=True)
class TurnMetadata:
    """The JSON header that repeats the ids, and the keys it uses for them."""

    header: str
    session_key: str
    thread_key: str
    parent_key: str
    label_key: str
    install_scoped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ThreadSession:
    """Root session + requesting thread + parent thread (see the module docstring)."""

    name: IdentityRule
    session: str
    thread: str
    parent: str
    metadata: TurnMetadata
    labels: tuple[str, ...] = ()

    def headers(self) -> tuple[str, ...]:
        return (self.session, self.thread, self.parent, self.metadata.header, *self.labels)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return ()  # headers only (the turn metadata is a header's JSON)

    def read(self, ev: Evidence, body: object) -> Keys | None:
        meta = self.metadata
        metadata = ev.header_json_object(meta.header)

        def from_metadata(key: str) -> tuple[str, Field]:
            name = f"{meta.header}.{key}"
            present, value = dig(metadata, key)
            return name, (ev.check(name, value) if present else ABSENT)

        for scoped in meta.install_scoped:
            if metadata is not None and dig(metadata, scoped)[0]:
                ev.reject(f"{meta.header}.{scoped}", REASON_INSTALL_SCOPED)
        session = ev.agree(
            (self.session, ev.header_id(self.session)), from_metadata(meta.session_key)
        )
        thread = ev.agree((self.thread, ev.header_id(self.thread)), from_metadata(meta.thread_key))
        parent_header = (self.parent, ev.header_id(self.parent))
        parent_metadata = from_metadata(meta.parent_key)
        parent = ev.agree(parent_header, parent_metadata)
        label = self._label(ev, metadata)
        for name in self.labels:
            ev.header_label(name)  # evidence only
        if session.value is None:
            return None
        keys = self._keys(ev, session.value, thread, parent, (parent_header, parent_metadata))
        return replace(keys, thread_id=thread.value, agent_name=label)

    def _label(self, ev: Evidence, metadata: Mapping[str, Any] | None) -> str | None:
        present, value = dig(metadata, self.metadata.label_key)
        if not present:
            return None
        return ev.label(f"{self.metadata.header}.{self.metadata.label_key}", value)

    def _keys(
        self,
        ev: Evidence,
        s: str,
        thread: Field,
        parent: Field,
        parents: tuple[tuple[str, Field], tuple[str, Field]],
    ) -> Keys:
        t = thread.value
        if t is None:
            if parent.present:
                return child(
                    self.name, session=s, session_is_root=True, participant=None, parent=None
                )
            return unknown_role(self.name, s, session_is_root=True)
        if t == s:
            _reject_present(ev, parents, REASON_ROOT_WITH_PARENT)
            return root(self.name, s)
        parent_key = parent.value
        if parent_key == t:
            _reject_present(ev, parents, REASON_SELF_PARENT)
            parent_key = None
        return child(self.name, session=s, session_is_root=True, participant=t, parent=parent_key)


def _reject_present(
    ev: Evidence, fields: tuple[tuple[str, Field], tuple[str, Field]], reason: str
) -> None:
    for name, value in fields:
        if value.present:
            ev.reject(name, reason)

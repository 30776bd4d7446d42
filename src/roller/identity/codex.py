"""Codex CLI header identity (checked against codex-cli 0.171.0).

What Codex sends on every `POST /v1/responses`:
- `session-id`: the root thread id, kept by every child;
- `thread-id`: the thread making the request (equal to `session-id` on the root);
- children only: `x-codex-parent-thread-id` (the spawning thread) and
  `x-openai-subagent: collab_spawn`;
- `x-codex-turn-metadata`: a JSON object repeating `session_id`, `thread_id`, and for
  children `parent_thread_id`, plus `agent_name` (`<home>` for parent and child alike in
  this version, so it is a label, never a key) and `installation_id` (install-scoped).

Rules kept:
- The caller is its thread: participant key = `thread-id`. Thread ids are uuids, unique
  across sessions, so a thread key needs no session prefix, and a child's parent key
  (the parent's thread id) is exactly what the parent's own requests derive, at any depth.
- Root iff `thread-id == session-id`; a parent named on a root thread is rejected.
- Each id may come from the header and from the turn metadata; when both are sent they
  must agree, else the id is ambiguous and not used (a conflicting parent costs the
  lineage; a conflicting session costs the identity).
- A child with no parent named keeps parent None: the root is not assumed, since at
  depth two it would be wrong.
- `installation_id` never keys anything and is not copied into evidence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from roller.identity.evidence import ABSENT, Evidence, Field, dig
from roller.identity.gating import REASON_INSTALL_SCOPED
from roller.identity.keys import Keys, child, root, unknown_role

SESSION: Final = "session-id"
THREAD: Final = "thread-id"
PARENT_THREAD: Final = "x-codex-parent-thread-id"
TURN_METADATA: Final = "x-codex-turn-metadata"
SUBAGENT: Final = "x-openai-subagent"

REASON_ROOT_WITH_PARENT: Final = "a root thread (thread-id equals session-id) has no parent"
REASON_SELF_PARENT: Final = "names the caller itself as its parent"


def codex_rule(ev: Evidence, body: object) -> Keys | None:
    metadata = ev.header_json_object(TURN_METADATA)

    def from_metadata(key: str) -> tuple[str, Field]:
        name = f"{TURN_METADATA}.{key}"
        present, value = dig(metadata, key)
        return name, (ev.check(name, value) if present else ABSENT)

    if metadata is not None and dig(metadata, "installation_id")[0]:
        ev.reject(f"{TURN_METADATA}.installation_id", REASON_INSTALL_SCOPED)
    session = ev.agree((SESSION, ev.header_id(SESSION)), from_metadata("session_id"))
    thread = ev.agree((THREAD, ev.header_id(THREAD)), from_metadata("thread_id"))
    parent_header = (PARENT_THREAD, ev.header_id(PARENT_THREAD))
    parent_metadata = from_metadata("parent_thread_id")
    parent = ev.agree(parent_header, parent_metadata)
    agent_name = None
    if dig(metadata, "agent_name")[0]:
        agent_name = ev.label(f"{TURN_METADATA}.agent_name", dig(metadata, "agent_name")[1])
    ev.header_label(SUBAGENT)  # evidence only: `collab_spawn` on child requests

    if session.value is None:
        return None
    s, t = session.value, thread.value
    if t is None:
        keys = unknown_role("codex-headers", s, session_is_root=True)
        if parent.present:
            keys = child(
                "codex-headers", session=s, session_is_root=True, participant=None, parent=None
            )
    elif t == s:
        for name, value in (parent_header, parent_metadata):
            if value.present:
                ev.reject(name, REASON_ROOT_WITH_PARENT)
        keys = root("codex-headers", s)
    else:
        parent_key = parent.value
        if parent_key == t:
            for name, value in (parent_header, parent_metadata):
                if value.present:
                    ev.reject(name, REASON_SELF_PARENT)
            parent_key = None
        keys = child(
            "codex-headers", session=s, session_is_root=True, participant=t, parent=parent_key
        )
    return replace(keys, thread_id=t, agent_name=agent_name)

"""Header rule kind `BodyLineage`: a header names the caller; a log slice in the body says
whether it is a child and of whom (the shape DeepSeek Harness sends).

What the kind reads (names declared by the harness profile):
- `caller`: the header naming the agent that made the call;
- `log`: the body path of a JSON object `{<id_key>, <parent_key>?, <origin_key>?,
  <depth_key>?, …}`. A root has no parent there; a child names its parent, or says
  `<origin_key>: <child_origin>`. The harness may omit the whole object (nothing pending
  to log), so its absence says nothing about the caller's role.
- `position` (optional): the body path of the integer that ends the log slice this
  request carries (DeepSeek `dsh_session_log.throughSeq`). With it, a request whose slice
  names the caller gets `run_id` `<caller>:<position>`: the harness's own id of the
  request, which its native log confirms (`delivery-accepted {sessionId, throughSeq}`).

Rules kept:
- The header is authoritative for the caller: participant key = the header's value.
- Lineage comes from the body only when the slice's id is present and equals the header
  (a log slice that does not name the caller is not the caller's lineage).
- A child's `session_key` is its parent; it is known to be the root only when the depth
  is exactly 1.
- No body lineage: the caller is known, its role is not (`is_child` None).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from roller.identity.evidence import BodyPath, Evidence, dig
from roller.identity.keys import Keys, child, root, unknown_role
from roller.identity.wire_identity import IdentityRule

REASON_SELF_PARENT: Final = "names the caller itself as its parent"
REASON_NOT_A_POSITION: Final = "not a non-negative integer"


def reason_body_mismatch(caller: str) -> str:
    return f"conflicts with {caller}"


@dataclass(frozen=True, slots=True)
class BodyLineage:
    """Caller header + body log lineage (see the module docstring)."""

    name: IdentityRule
    caller: str
    log: tuple[str, ...]
    id_key: str
    parent_key: str
    origin_key: str
    child_origin: str
    depth_key: str
    position: tuple[str, ...] | None = None

    def headers(self) -> tuple[str, ...]:
        return (self.caller,)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return (self.log,) if self.position is None else (self.log, self.position)

    @property
    def field(self) -> str:
        """Where the log slice's values are filed in evidence and rejections."""
        return "body." + ".".join(self.log)

    def read(self, ev: Evidence, body: object) -> Keys | None:
        caller = ev.header_id(self.caller).value
        if caller is None:
            return None
        present, session_log = dig(body, *self.log)
        if not present or not isinstance(session_log, Mapping):
            return unknown_role(self.name, caller, session_is_root=False, participant=caller)
        # The slice must name this caller, or it is not this caller's lineage to read.
        logged = (
            ev.check(f"{self.field}.{self.id_key}", session_log[self.id_key])
            if self.id_key in session_log
            else None
        )
        if logged is None or logged.value != caller:
            if logged is not None and logged.value is not None:
                ev.reject(f"{self.field}.{self.id_key}", reason_body_mismatch(self.caller))
            return unknown_role(self.name, caller, session_is_root=False, participant=caller)
        return replace(
            self._lineage(ev, caller, session_log), run_id=self._run_id(ev, caller, body)
        )

    def _run_id(self, ev: Evidence, caller: str, body: object) -> str | None:
        if self.position is None:
            return None
        present, seq = dig(body, *self.position)
        if not present:
            return None
        where = "body." + ".".join(self.position)
        if type(seq) is not int or seq < 0:
            ev.reject(where, REASON_NOT_A_POSITION)
            return None
        ev.label(where, str(seq))
        return f"{caller}:{seq}"

    def _lineage(self, ev: Evidence, caller: str, session_log: Mapping[str, Any]) -> Keys:
        is_child = (
            self.parent_key in session_log or session_log.get(self.origin_key) == self.child_origin
        )
        if not is_child:
            return root(self.name, caller)
        parent: str | None = None
        if self.parent_key in session_log:
            where = f"{self.field}.{self.parent_key}"
            parent = ev.check(where, session_log[self.parent_key]).value
            if parent == caller:
                ev.reject(where, REASON_SELF_PARENT)
                parent = None
        depth = session_log.get(self.depth_key)
        depth_one = type(depth) is int and depth == 1
        return child(
            self.name,
            session=parent if parent is not None else caller,
            session_is_root=parent is not None and depth_one,
            participant=caller,
            parent=parent,
        )

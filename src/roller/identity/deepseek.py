"""DeepSeek Harness identity (checked against deepseek-harness 0.2.1rc2).

What it sends on every `POST …/v1/messages`:
- header `x-deepseek-harness-session-id`: the agent that made the call (the SDK's
  `session_id` for the root, a uuid per subagent; `session-<uuid>` in headless mode);
- header `x-deepseek-harness-user-id`: install-scoped (per `DSH_HOME`), never a key;
- body `dsh_session_log.session`: `{id, parentSession?, origin: "subagent"?,
  delegationDepth?, …}`. The root has no `parentSession`; a child names its parent there.
  The whole field is omitted when the harness has no pending log events or the slice is
  over 8 MiB, so its absence says nothing about the caller's role.

Rules kept:
- The header is authoritative for the caller: participant key = the header's value.
- Lineage comes from the body only when its `session.id` is present and equals the
  header (a log slice that does not name the caller is not the caller's lineage).
- A child is one whose body names a `parentSession` or says `origin: "subagent"`. Its
  `session_key` is the parent; it is known to be the root only when `delegationDepth` is 1.
- No body lineage: the caller is known, its role is not (`is_child` None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from roller.identity.evidence import Evidence, dig
from roller.identity.keys import Keys, child, root, unknown_role

SESSION: Final = "x-deepseek-harness-session-id"
_LOG: Final = "body.dsh_session_log.session"

REASON_BODY_MISMATCH: Final = f"conflicts with {SESSION}"
REASON_SELF_PARENT: Final = "names the caller itself as its parent"


def deepseek_rule(ev: Evidence, body: object) -> Keys | None:
    caller = ev.header_id(SESSION).value
    if caller is None:
        return None
    present, session_log = dig(body, "dsh_session_log", "session")
    if not present or not isinstance(session_log, Mapping):
        return unknown_role("deepseek-headers", caller, session_is_root=False, participant=caller)
    # The slice must name this caller, or it is not this caller's lineage to read.
    logged = ev.check(f"{_LOG}.id", session_log["id"]) if "id" in session_log else None
    if logged is None or logged.value != caller:
        if logged is not None and logged.value is not None:
            ev.reject(f"{_LOG}.id", REASON_BODY_MISMATCH)
        return unknown_role("deepseek-headers", caller, session_is_root=False, participant=caller)
    is_child = "parentSession" in session_log or session_log.get("origin") == "subagent"
    if not is_child:
        return root("deepseek-headers", caller)
    parent: str | None = None
    if "parentSession" in session_log:
        parent = ev.check(f"{_LOG}.parentSession", session_log["parentSession"]).value
        if parent == caller:
            ev.reject(f"{_LOG}.parentSession", REASON_SELF_PARENT)
            parent = None
    depth = session_log.get("delegationDepth")
    depth_one = type(depth) is int and depth == 1
    return child(
        "deepseek-headers",
        session=parent if parent is not None else caller,
        session_is_root=parent is not None and depth_one,
        participant=caller,
        parent=parent,
    )

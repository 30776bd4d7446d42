"""DeepSeek Harness on the wire (0.2.1rc2, probed 2026-11-29 and 2026-12-01;
/work/shared/harnesses/deepseek.md; docs/harnesses.md).

Identity (rule `deepseek-headers`, kind `BodyLineage`), on every `POST …/v1/messages`:
- header `x-deepseek-harness-session-id`: the agent that made the call (the SDK's
  `session_id` for the root, a uuid per subagent; `session-<uuid>` in headless mode);
- header `x-deepseek-harness-user-id`: install-scoped (per `DSH_HOME`), never a key;
- body `dsh_session_log.session`: `{id, parentSession?, origin: "subagent"?,
  delegationDepth?, seedLength?, …}`. The root has no `parentSession`; a child names its
  parent there; a forked child also says how many events it inherited (`seedLength`).
  The whole field is omitted when the harness has no pending log events or the slice is
  over 8 MiB, so its absence says nothing about the caller's role.
- body `dsh_session_log.throughSeq`: the last native log event this request carries; the
  harness appends `delivery-accepted {sessionId, throughSeq}` to that session's log when
  the request is accepted, so `<session>:<throughSeq>` is the request's own id (`run_id`).

Tools (mock roles): `subagent`, and `subagent_fork` for a spawn that forks the parent's
history; `bash`.

Private fields (left out of training exports, kept in the capture): `dsh_session_log`
and `dsh_plugin_packages`, sizes measured on the probed version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import BodyLineage, WireProfile

NAME: Final = "deepseek"
SESSION_HEADER: Final = "x-deepseek-harness-session-id"
SESSION_LOG: Final = "dsh_session_log"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=BodyLineage(
        "deepseek-headers",
        caller=SESSION_HEADER,
        log=(SESSION_LOG, "session"),
        id_key="id",
        parent_key="parentSession",
        origin_key="origin",
        child_origin="subagent",
        depth_key="delegationDepth",
        position=(SESSION_LOG, "throughSeq"),
    ),
    install_scoped=("x-deepseek-harness-user-id",),
)

TOOLS: Final = ToolHints(
    roles={"spawn": ("subagent",), "shell": ("bash",)}, fork_spawn=("subagent_fork",)
)

# body field -> why the training exports leave it out
PRIVATE_FIELDS: Final[Mapping[str, str]] = {
    "dsh_session_log": "the slice of its native event log each request carries (lineage "
    "evidence, resent at least once; ~26 KB of a 55 KB request)",
    "dsh_plugin_packages": "the package@version list of its plugins",
}

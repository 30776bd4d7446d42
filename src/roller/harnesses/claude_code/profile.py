"""Claude Code on the wire (2.1.332, probed 2026-11-29; /work/shared/harnesses/claude-code.md).

Identity headers (rule `claude-code-headers`, kind `AgentScoped`):
`x-claude-code-session-id: S` on every request (parent and every subagent alike),
`x-claude-code-agent-id: A` on subagent requests only (`a` + 16 hex), and
`x-claude-code-parent-agent-id: P` only at depth two and deeper. The child's key is
`S:A`, its parent `S:P`, or S for a depth-one child.

Body: `metadata.user_id` is a JSON *string* `{"device_id": …, "account_uuid": …,
"session_id": <session uuid>}`. The session is the same for the parent and every
subagent: per conversation, not per participant. `device_id` is install-scoped and
`account_uuid` account-scoped: never keys.

Tools (mock roles): `Agent` (older versions: `Task`), `Bash`, `Write`, `Read`.

Injected input: a text part of a `user` or `system` message holding a whole
`<task-notification>…</task-notification>` element and opening with one of Claude Code's
wrappers — `<system-reminder>` (a new turn, `user` message), `[SYSTEM NOTIFICATION - NOT
USER INPUT]` (delivered mid-turn, `system` message) or the element itself — is a
`task_notification` naming its `<tool-use-id>`; any other part that is a whole
`<system-reminder>…</system-reminder>` is a `system_reminder`.
"""

from __future__ import annotations

import re
from typing import Final

from roller.harnesses.tools import ToolHints
from roller.harnesses.wrappers import ElementPart, InjectionWrappers, NotificationPart
from roller.identity import (
    REASON_ACCOUNT_SCOPED,
    REASON_INSTALL_SCOPED,
    AgentScoped,
    JsonStringField,
    WireProfile,
)

NAME: Final = "claude-code"

SESSION_HEADER: Final = "x-claude-code-session-id"
AGENT_HEADER: Final = "x-claude-code-agent-id"
PARENT_AGENT_HEADER: Final = "x-claude-code-parent-agent-id"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=AgentScoped("claude-code-headers", SESSION_HEADER, AGENT_HEADER, PARENT_AGENT_HEADER),
    body=JsonStringField(
        path=("metadata", "user_id"),
        key="session_id",
        scoped=(("device_id", REASON_INSTALL_SCOPED), ("account_uuid", REASON_ACCOUNT_SCOPED)),
    ),
)

# The delegation tool, newest name first (the reader accepts both; the launch denies the
# first when calls are not captured).
SPAWN_TOOLS: Final = ("Agent", "Task")

TOOLS: Final = ToolHints(
    roles={"spawn": SPAWN_TOOLS, "shell": ("Bash",), "write": ("Write",), "read": ("Read",)}
)

_REMINDER: Final = ("<system-reminder>", "</system-reminder>")
_TASK_NOTIFICATION: Final = ("<task-notification>", "</task-notification>")
_NOTIFICATION_BANNER: Final = "[SYSTEM NOTIFICATION - NOT USER INPUT]"

INJECTIONS: Final = InjectionWrappers(
    roles=("user", "system"),
    parts=(
        NotificationPart(
            kind="task_notification",
            element=_TASK_NOTIFICATION,
            openings=(_REMINDER[0], _NOTIFICATION_BANNER, _TASK_NOTIFICATION[0]),
            names=re.compile(r"<tool-use-id>\s*([^<\s]+)\s*</tool-use-id>"),
            trailer=_REMINDER[1],
            binds="tool_call_id",
        ),
        ElementPart(kind="system_reminder", open=_REMINDER[0], close=_REMINDER[1]),
    ),
)

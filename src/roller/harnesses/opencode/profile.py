"""OpenCode on the wire (1.18.33, probed 2026-11-29; /work/shared/harnesses/opencode.md).

Identity headers (rule `opencode-headers`, kind `SessionPerAgent`): every subagent is its
own OpenCode session: `x-session-id: X` names the caller, `x-parent-session-id: P`
(children only) its parent; `x-session-affinity` always equals X and is evidence only.
The root is not on a child's wire, only its parent; OpenCode refuses depth two, so in
practice P is the root.

Body: nothing read.

Tools (mock roles): `task` (needs `subagent_type: "general"`), `bash`, `write`, `read`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import SessionPerAgent, WireProfile

NAME: Final = "opencode"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=SessionPerAgent(
        "opencode-headers",
        own="x-session-id",
        parent="x-parent-session-id",
        evidence=("x-session-affinity",),
    ),
)

TOOLS: Final = ToolHints(
    roles={"spawn": ("task",), "shell": ("bash",), "write": ("write",), "read": ("read",)},
    constants={"task": {"subagent_type": "general"}},
)

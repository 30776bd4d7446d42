"""Gemini CLI on the wire (0.61.0, probed 2026-11-29; /work/shared/harnesses/gemini-cli.md).

Identity: none. No session id anywhere; headers are identical for parent and subagent.
With usage statistics on (roller turns them off) it sends
`x-gemini-api-privileged-user-id`, an install id: install-scoped, never read. Identity
comes from the native telemetry file (docs/harnesses.md, "Gemini CLI").

Tools (mock roles): `invoke_agent` (needs `agent_name: "generalist"`),
`run_shell_command`, `write_file`, `read_file`, and a subagent's `complete_task`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import WireProfile

NAME: Final = "gemini-cli"

WIRE: Final = WireProfile(harness=NAME, install_scoped=("x-gemini-api-privileged-user-id",))

SPAWN_TOOL: Final = "invoke_agent"

TOOLS: Final = ToolHints(
    roles={
        "spawn": (SPAWN_TOOL,),
        "shell": ("run_shell_command",),
        "write": ("write_file",),
        "read": ("read_file",),
        "complete": ("complete_task",),
    },
    constants={SPAWN_TOOL: {"agent_name": "generalist"}},
)

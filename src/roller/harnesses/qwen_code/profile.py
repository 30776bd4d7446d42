"""Qwen Code on the wire (0.24.4, probed 2026-11-29; /work/shared/harnesses/qwen-code.md).
Seen only through the gateway: no adapter.

Identity: nothing in headers, nor in Chat/Anthropic bodies. The Responses
`prompt_cache_key` is `qwen-code:<sessionId>`, the same for parent and child: it names
the session only (the part after the prefix), never the participant.

Tools (mock roles): `agent`, `run_shell_command`, `write_file`, `read_file`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import BodyField, WireProfile

NAME: Final = "qwen-code"

WIRE: Final = WireProfile(harness=NAME, body=BodyField(("prompt_cache_key",), prefix=f"{NAME}:"))

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("agent",),
        "shell": ("run_shell_command",),
        "write": ("write_file",),
        "read": ("read_file",),
    }
)

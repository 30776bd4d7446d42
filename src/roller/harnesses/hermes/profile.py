"""Hermes Agent on the wire (0.19.0, probed 2026-11-29; /work/shared/harnesses/hermes.md).
Seen only through the gateway: no adapter.

Identity: nothing in headers or Chat/Anthropic bodies. The Responses `prompt_cache_key`
is `pck_<hash>` of instructions and tools, identical across unrelated runs: reported as
a body conversation id that is *not* per conversation, so it never keys anything.

Tools (mock roles): `delegate_task`, `terminal`, `write_file`, `read_file`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import BodyField, WireProfile

NAME: Final = "hermes"

WIRE: Final = WireProfile(
    harness=NAME, body=BodyField(("prompt_cache_key",), per_conversation=False)
)

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("delegate_task",),
        "shell": ("terminal",),
        "write": ("write_file",),
        "read": ("read_file",),
    }
)

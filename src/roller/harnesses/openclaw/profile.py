"""OpenClaw on the wire (2026.9.6, probed 2026-11-29; /work/shared/harnesses/openclaw.md).
Seen only through the gateway: no adapter.

Identity: none read. The only candidate is a W3C `traceparent`, one trace id per
top-level `openclaw agent` command, inherited by children: per command, not per
conversation, and a generic header any SDK sends. Session ids appear only in prompt
text (never read).

Tools (mock roles): `sessions_spawn`, `exec`, `write`, `read`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import WireProfile

NAME: Final = "openclaw"

WIRE: Final = WireProfile(harness=NAME)

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("sessions_spawn",),
        "shell": ("exec",),
        "write": ("write",),
        "read": ("read",),
    }
)

"""Pi on the wire (0.73.1, probed 2026-11-29; /work/shared/harnesses/pi.md).

Identity header (rule `pi-session-header`, kind `SessionHeader`): `session_id`, on the
Responses API only (`x-client-request-id` and the body's `prompt_cache_key` carry the
same value). Pi has no in-process subagents: the caller is the session. The example
subagent extension starts a separate process with its own fresh id and nothing linking
it to the parent. Chat Completions and Anthropic routes carry no id.

Body: `prompt_cache_key` (Responses) equals the `session_id` header: per conversation and
per participant (one participant per Pi session).

Tools (mock roles): `bash`, `write`, `read`; the example extension's `subagent`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.identity import BodyField, SessionHeader, WireProfile

NAME: Final = "pi"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=SessionHeader("pi-session-header", "session_id"),
    body=BodyField(("prompt_cache_key",), per_participant=True),
)

TOOLS: Final = ToolHints(
    roles={"spawn": ("subagent",), "shell": ("bash",), "write": ("write",), "read": ("read",)}
)

"""Hermes Agent on the wire (0.19.0, probed 2026-11-29 and 2026-12-01;
/work/shared/harnesses/hermes.md; docs/harnesses.md).

Identity: Hermes itself puts nothing on the wire that names an agent (no header; no
`user` or `metadata` in Chat or Anthropic bodies). Under `roller collect`, roller's own
plugin (`roller.harnesses.hermes.plugin`, enabled in the scratch config) adds one
header to every model request, `x-roller-hermes-session-id`: the executing agent's own
session id (`state.db` `sessions.id`), the root's and each child's alike. Rule
`hermes-plugin-header` (kind `CallerHeader`): it names the caller; whether that is a
child, and whose, only the native store says (`sessions.parent_session_id`). The
proxy records it and removes it before forwarding, like every `x-roller-*` header.
The Responses `prompt_cache_key` is `pck_<hash>` of instructions and tools, identical
across unrelated runs: a body conversation id that is *not* per conversation, so it
never keys anything.

Tools (mock roles): `delegate_task`, `terminal`, `write_file`, `read_file`.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.hermes.plugin import HEADER
from roller.harnesses.tools import ToolHints
from roller.identity import BodyField, CallerHeader, WireProfile

NAME: Final = "hermes"
# The header roller's plugin sends (declared once, in the plugin Hermes runs).
SESSION_HEADER: Final = HEADER

WIRE: Final = WireProfile(
    harness=NAME,
    rule=CallerHeader("hermes-plugin-header", SESSION_HEADER),
    body=BodyField(("prompt_cache_key",), per_conversation=False),
)

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("delegate_task",),
        "shell": ("terminal",),
        "write": ("write_file",),
        "read": ("read_file",),
    }
)

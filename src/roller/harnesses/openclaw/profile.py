"""OpenClaw on the wire (2026.9.6, probed 2026-12-01; docs/harnesses.md, "OpenClaw").

Identity: none read. The only candidate is a W3C `traceparent`, one trace id per
top-level `openclaw agent` command, inherited by its children and announce turns: per
command, not per conversation, and a generic header any SDK sends. Session ids appear
only in prompt text (never read). roller attributes OpenClaw's calls through its native
store instead (`roller.harnesses.openclaw.native`: the assistant `responseId`).

Tools (mock roles): `sessions_spawn` (direct, with `tools.toolSearch: false`; behind the
Tool Search bridge `tool_call{"id": "sessions_spawn", "args": {...}}` by default, the
tool then listed only in the system prompt's "Deferred Tool Schemas"), `exec`, `write`,
`read`. A forking spawn passes `context: "fork"`.

Injected input: the announce turn's user message, stamped with a date first:
`[Tue 2026-12-01 19:15 UTC] A background task completed. … session_key: <child key> …`,
naming the child's session key. It binds to the `result_delivered` relation the native
announce run proves; an unbound one bars the main trajectory. The same block, the
`<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>` block beside it and the `[Subagent Context]`
settle/wake messages quote the child's task back: the mock does not read them as what
the user wrote.
"""

from __future__ import annotations

import re
from typing import Final

from roller.harnesses.tools import ToolBridge, ToolHints
from roller.harnesses.wrappers import InjectionWrappers, MarkedPart
from roller.identity import WireProfile

NAME: Final = "openclaw"

WIRE: Final = WireProfile(harness=NAME)

# The optional date stamp OpenClaw puts before a user message it writes.
_STAMP = r"(?:\[[^\]\n]*\] )?"
ANNOUNCE_MARKER: Final = re.compile(_STAMP + r"A background task completed\.")

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("sessions_spawn",),
        "shell": ("exec",),
        "write": ("write",),
        "read": ("read",),
    },
    fork_arguments={"sessions_spawn": {"context": "fork"}},
    bridge=ToolBridge(
        tool="tool_call",
        name_field="id",
        args_field="args",
        # As OpenClaw documents it (docs/tools/subagents/tool-reference.md); the request
        # carries no schema for a deferred tool.
        deferred={
            "sessions_spawn": {
                "type": "object",
                "required": ["task"],
                "properties": {
                    "task": {"type": "string"},
                    "context": {"type": "string", "enum": ["isolated", "fork"]},
                },
            }
        },
    ),
    quoting_wrappers=(
        ANNOUNCE_MARKER.pattern,
        r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>",
        _STAMP + r"\[Subagent Context\] (?:Your prior run ended|Every subagent spawned)",
    ),
)

INJECTIONS: Final = InjectionWrappers(
    roles=("user",),
    message_type="message",
    parts=(
        MarkedPart(
            kind="subagent_announce",
            marker=ANNOUNCE_MARKER,
            names=re.compile(r"^session_key: (\S+)$", re.MULTILINE),
            binds="child",
            bars_unbound=True,
        ),
    ),
)

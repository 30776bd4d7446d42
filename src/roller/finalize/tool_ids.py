"""The id each emitted tool call's results carry, per call.

A tool call's id is the one its HTTP output carries. Where the output carries none
(Gemini), the id the harness assigned to that position of that output, as its native
log records it under the output's response id (`NativeCapture.assigned_tool_ids`),
stands in — only when the native list names the same tools in the same order as the
output; a list that does not fit assigns nothing and is a `native_log_problem`.
Position inside one output is its structure, not request order. A harness that sends a
tool call back under another id (`NativeCapture.replayed_tool_ids`: OpenClaw's
`call_probe_1` -> `callprobe1`) has its results found under that id; the relation keeps
the output's own id, and the manifest lists each such mapping (`tool_id_map`).
"""

from __future__ import annotations

from collections.abc import Sequence

from roller.finalize.call_facts import CallFacts
from roller.finalize.rows import Rows
from roller.harnesses.base import NativeCapture

# per emitted tool call of one call: the id its results carry (None: no id known)
ToolIds = tuple[str | None, ...]


# Every call's `ToolIds` (a tuple and its strings per call cost ~0.1 KB; a row ~20 bytes)
ToolIdRows = Rows[ToolIds]


def tool_refs_of(
    calls: Sequence[CallFacts], native: NativeCapture | None
) -> tuple[ToolIdRows, list[str]]:
    """Per call, per emitted tool call, the id its results carry; and the problems found
    (one message per native list that does not fit its output)."""
    assigned = native.assigned_tool_ids if native is not None else {}
    replayed = native.replayed_tool_ids if native is not None else {}
    out: ToolIdRows = Rows()
    problems: list[str] = []
    for call in calls:
        own: ToolIds = tuple(
            replayed.get(t.id, t.id) if t.id is not None else None for t in call.emitted
        )
        listed = assigned.get(call.response_id) if call.response_id is not None else None
        if listed is None:
            out.append(own)
            continue
        names = [t.name for t in call.emitted]
        if names != [a.name for a in listed]:
            problems.append(
                f"response {call.response_id}: the native log assigns tool-call ids to "
                f"{[a.name for a in listed]}, but the output calls {names}"
            )
            out.append(own)
            continue
        out.append(tuple(o if o is not None else a.id for o, a in zip(own, listed, strict=True)))
    return out, problems

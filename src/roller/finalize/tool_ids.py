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

import marshal
from array import array
from collections.abc import Sequence
from typing import overload

from roller.finalize.call_facts import CallFacts
from roller.harnesses.base import NativeCapture

# per emitted tool call of one call: the id its results carry (None: no id known)
ToolIds = tuple[str | None, ...]


class ToolIdRows(Sequence[ToolIds]):
    """Every call's `ToolIds`, held as `marshal` rows in one buffer (a tuple and its
    strings per call cost ~0.1 KB; a row ~20 bytes), each rebuilt when asked."""

    def __init__(self) -> None:
        self._rows = bytearray()
        self._ends = array("q")

    def append(self, ids: ToolIds) -> None:
        self._rows += marshal.dumps(ids)
        self._ends.append(len(self._rows))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, i: int) -> ToolIds: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[ToolIds]: ...
    def __getitem__(self, i: int | slice) -> ToolIds | Sequence[ToolIds]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        start = self._ends[i - 1] if i > 0 else 0
        ids: ToolIds = marshal.loads(self._rows[start : self._ends[i]])
        return ids

    def __eq__(self, other: object) -> bool:  # equal to the list of the same tuples
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            if len(other) != len(self):
                return False
            return all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def tool_refs_of(
    calls: Sequence[CallFacts], native: NativeCapture | None
) -> tuple[ToolIdRows, list[str]]:
    """Per call, per emitted tool call, the id its results carry; and the problems found
    (one message per native list that does not fit its output)."""
    assigned = native.assigned_tool_ids if native is not None else {}
    replayed = native.replayed_tool_ids if native is not None else {}
    out = ToolIdRows()
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

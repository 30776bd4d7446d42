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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from roller.finalize.call_facts import CallFacts
from roller.finalize.kept_facts import outputs_of
from roller.finalize.rows import Rows
from roller.harnesses.base import AssignedToolId, NativeCapture
from roller.wire.types import ToolCall


class ToolIdSource(Protocol):
    """What `call_tool_ids` reads of the native capture (a `NativeCapture`, or the
    `NativeToolIds` a worker process is handed)."""

    @property
    def replayed_tool_ids(self) -> Mapping[str, str]: ...
    @property
    def assigned_tool_ids(self) -> Mapping[str, tuple[AssignedToolId, ...]]: ...


@dataclass(frozen=True, slots=True)
class NativeToolIds:
    """A native capture's tool-call ids alone, as plain dicts (pickled as they are)."""

    replayed_tool_ids: dict[str, str]
    assigned_tool_ids: dict[str, tuple[AssignedToolId, ...]]

    @classmethod
    def of(cls, native: NativeCapture | None) -> NativeToolIds | None:
        if native is None:
            return None
        return cls(dict(native.replayed_tool_ids), dict(native.assigned_tool_ids))


# per emitted tool call of one call: the id its results carry (None: no id known)
ToolIds = tuple[str | None, ...]


# Every call's `ToolIds` (a tuple and its strings per call cost ~0.1 KB; a row ~20 bytes)
ToolIdRows = Rows[ToolIds]


def tool_refs_of(
    calls: Sequence[CallFacts], native: NativeCapture | None
) -> tuple[ToolIdRows, list[str]]:
    """Per call, per emitted tool call, the id its results carry; and the problems found
    (one message per native list that does not fit its output)."""
    out: ToolIdRows = Rows()
    problems: list[str] = []
    for response_id, emitted in outputs_of(calls):
        ids, problem = call_tool_ids(response_id, emitted, native)
        out.append(ids)
        if problem is not None:
            problems.append(problem)
    return out, problems


def call_tool_ids(
    response_id: str | None, emitted: Sequence[ToolCall], native: ToolIdSource | None
) -> tuple[ToolIds, str | None]:
    """One call's `ToolIds` (given its response id and emitted tool calls), and the
    problem when the native list for its output does not fit it: what `tool_refs_of`
    gives per call, for finalize's first pass, which asks one call at a time."""
    replayed = native.replayed_tool_ids if native is not None else {}
    own: ToolIds = tuple(replayed.get(t.id, t.id) if t.id is not None else None for t in emitted)
    listed = (
        native.assigned_tool_ids.get(response_id)
        if native is not None and response_id is not None
        else None
    )
    if listed is None:
        return own, None
    names = [t.name for t in emitted]
    if names != [a.name for a in listed]:
        return own, (
            f"response {response_id}: the native log assigns tool-call ids to "
            f"{[a.name for a in listed]}, but the output calls {names}"
        )
    return tuple(o if o is not None else a.id for o, a in zip(own, listed, strict=True)), None

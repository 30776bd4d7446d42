"""A segment of the main trajectory under construction, and why a new one starts.

A segment is a maximal run of root calls each extending the history (input + output
items, as their codec keys them: `Codec.item_key`) of the one before. `Segment` keeps that
history's keys, the distinct request configurations and tool snapshots (by their
canonical JSON), the requests and the items; `place` finds the segment a call extends (and
its first new item); `start_of` says why a call that extends no segment starts a new one,
and where its input diverged from the latest segment. `keyed_items` and `as_replayed`
are the keys compared: an output's tool-call ids as the harness sends them back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from roller.capture.trajectory_record import (
    SegmentStart,
    ToolSnapshot,
    TrajectoryMessage,
    TrajectoryRequest,
    TrajectorySegment,
)
from roller.wire import Codec
from roller.wire.history import describe_key
from roller.wire.types import Key


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Segment:
    """A segment under construction."""

    index: int
    protocol: str
    model: str | None
    system: Key
    start: SegmentStart
    state: list[Key] = field(default_factory=list)  # keys of the history so far
    last_call_id: str = ""
    configs: list[Any] = field(default_factory=list)
    config_keys: list[str] = field(default_factory=list)
    snapshots: list[tuple[str, Any, list[str]]] = field(default_factory=list)
    requests: list[TrajectoryRequest] = field(default_factory=list)
    messages: list[TrajectoryMessage] = field(default_factory=list)

    def config_index(self, config: dict[str, Any]) -> int:
        key = canon(config)
        if key not in self.config_keys:
            self.config_keys.append(key)
            self.configs.append(config)
        return self.config_keys.index(key)

    def tools_index(self, tools: Any, call_id: str) -> int:
        key = canon(tools)
        for n, (k, _, ids) in enumerate(self.snapshots):
            if k == key:
                ids.append(call_id)
                return n
        self.snapshots.append((key, tools, [call_id]))
        return len(self.snapshots) - 1

    def extended_by(self, keys: list[Key]) -> bool:
        return len(self.state) <= len(keys) and keys[: len(self.state)] == self.state

    def freeze(self) -> TrajectorySegment:
        return TrajectorySegment(
            index=self.index,
            protocol=self.protocol,
            model=self.model,
            start=self.start,
            configs=self.configs,
            tool_snapshots=[ToolSnapshot(tools=t, call_ids=ids) for _, t, ids in self.snapshots],
            requests=self.requests,
            messages=self.messages,
        )


def start_of(
    segments: list[Segment], protocol: str, system: Key, keyed: list[tuple[int, Key]]
) -> SegmentStart:
    """Why a call whose keyed input extends no segment starts a new one."""
    if not segments:
        return SegmentStart(reason="first_call", previous_segment=None, detail=None)
    keys = [k for _, k in keyed]
    latest = segments[-1]
    if latest.protocol != protocol:
        return SegmentStart(
            reason="protocol_changed",
            previous_segment=latest.index,
            detail=f"segment {latest.index} uses {latest.protocol}, this call {protocol}",
        )
    for s in reversed(segments):
        if s.protocol == protocol and s.system != system and s.extended_by(keys):
            return SegmentStart(
                reason="system_changed",
                previous_segment=s.index,
                detail=f"the messages extend segment {s.index} (through call "
                f"{s.last_call_id}) but the system prompt differs",
            )
    return SegmentStart(
        reason="not_a_continuation",
        previous_segment=latest.index,
        detail=_divergence(latest, keyed),
    )


def _divergence(segment: Segment, keyed: list[tuple[int, Key]]) -> str:
    state = segment.state
    against = f"the history of segment {segment.index} through call {segment.last_call_id}"
    for j, (position, key) in enumerate(keyed):
        if j >= len(state):
            break
        if key != state[j]:
            return f"input item {position} ({describe_key(key)}) differs from item {j} of {against}"
    return (
        f"the input has {len(keyed)} compared items, {against} has {len(state)}: "
        "the input is a truncation of it"
    )


def keyed_items(codec: Codec, items: list[Any]) -> list[tuple[int, Key]]:
    keyed = ((i, codec.item_key(it)) for i, it in enumerate(items))
    return [(i, k) for i, k in keyed if k is not None]


# Where a tool-call id sits in a history item, in every protocol roller records.
_TOOL_ID_FIELDS = frozenset({"id", "call_id", "tool_call_id", "tool_use_id"})


def as_replayed(value: Any, replayed: dict[str, str]) -> Any:
    """`value` with each output tool-call id the harness rewrites put as it is replayed,
    so an output compares equal to the same message sent back (the record keeps the
    output verbatim; only the comparison key changes)."""
    if isinstance(value, list):
        return [as_replayed(v, replayed) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: replayed.get(v, v)
        if k in _TOOL_ID_FIELDS and isinstance(v, str)
        else as_replayed(v, replayed)
        for k, v in value.items()
    }


def place(
    segments: list[Segment],
    protocol: str,
    model: str | None,
    system: Key,
    keyed: list[tuple[int, Key]],
) -> tuple[Segment, int]:
    """The segment a call with these keyed input items extends — the longest match, the
    earliest of equals — and the position of its first new item; or a new segment
    (appended, its `start` saying why) from position 0."""
    keys = [k for _, k in keyed]
    candidates = [
        s for s in segments if s.protocol == protocol and s.system == system and s.extended_by(keys)
    ]
    if candidates:
        segment = max(candidates, key=lambda s: (len(s.state), s.index))
        matched = len(segment.state)
        return segment, keyed[matched - 1][0] + 1 if matched else 0
    segment = Segment(
        index=len(segments),
        protocol=protocol,
        model=model,
        system=system,
        start=start_of(segments, protocol, system, keyed),
    )
    segments.append(segment)
    return segment, 0

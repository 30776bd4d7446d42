"""The main trajectory (the seed's ACTF): the root participant's conversation, from its calls.

`build_trajectory(capture) -> TrajectoryRecord` is pure over a `Capture`. Rules kept
(`docs/protocol.md`, "Main trajectory"):
1. Root only. The trajectory is built from the root participant's own generation calls;
   a subtask's messages never appear (they live in its own calls). No single root in
   the manifest, or any generation call of the capture that is unattributed or
   ambiguous (it may be a missing root turn, which would be stitched over silently),
   yields no trajectory (`built: false`) with the reason.
2. Prefix property. Each root call's input must extend the history (input + output) of
   an earlier root call, item by item, under its codec's definition of "the same
   message" (`Codec.item_key`, rules in `roller.wire.history`); it then continues that
   call's segment, contributing only the items it added. A call that extends no earlier
   history (compaction, a side request such as title generation, rewritten history), or
   whose system prompt or protocol differs, starts a new segment whose `start` says why
   and where it diverged. Segments are never stitched together. An output is compared
   with its tool-call ids as the harness sends them back (the manifest's `tool_id_map`:
   OpenClaw's `call_probe_1` -> `callprobe1`), built from the actual outputs.
3. Verbatim. Items are the protocol's own, exactly as sent (input) or received (output,
   as the protocol's history item); no cross-protocol conversion. An output that did
   not complete is not an item (its call is blocked anyway, and a retry resends the
   same input, so it continues the segment). Configuration is the request body minus
   its items and `tools`; tools are recorded as sent, per snapshot.
4. Injected input (`roller.export.injections`) stays the input item it was, tagged
   `injected` with the harness wrapper and the relations that bind it.
5. Dynamic tools: tools that change between calls of a segment, tool-loading items in
   the root's history (`Codec.loads_tools`), or an adapter's
   `main_trajectory_export_blocked: dynamic_tools…` note block export (`dynamic_tools`);
   per-call export is not affected.
6. Only exportable root calls may back an exportable trajectory (`root_call_blocked`);
   a failed coverage check (`coverage_mismatch`) or another adapter bar (`native_bar`)
   blocks it too, as does an injected notification whose wrapper must bind and did not
   (`notification_unbound`, OpenClaw's announce block).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, get_args

from roller.capture.models import CallRecord, ParticipantRecord, RelationRecord
from roller.capture.reader import Capture
from roller.capture.trajectory_record import (
    TrajectoryBlock,
    TrajectoryMessage,
    TrajectoryProblem,
    TrajectoryRecord,
    TrajectoryRequest,
    TrajectorySegment,
    TrajectorySource,
)
from roller.export.injections import injections_of, unbound_barring
from roller.export.segments import Segment, as_replayed, keyed_items, place
from roller.wire import Codec, codec_named
from roller.wire.types import History

NATIVE_BAR_PREFIX = "main_trajectory_export_blocked:"
_BLOCK_ORDER: tuple[TrajectoryBlock, ...] = get_args(TrajectoryBlock)
_UNAVAILABLE = frozenset(
    {
        "root_unknown",
        "unattributed_calls",
        "no_root_calls",
        "history_not_in_request",
        "unreadable_request",
    }
)


@dataclass
class _Context:
    """What building needs besides the calls: who is root, relations, the harness."""

    harness: str
    root_id: str
    capture: Capture
    participants: dict[str, ParticipantRecord]
    problems: list[TrajectoryProblem] = field(default_factory=list)

    @cached_property
    def delivered(self) -> list[RelationRecord]:
        """The only relations an injection binds to (`injections_of`): read once, when
        one is to be bound, and few — not every relation (derived ones grow with the
        square of a conversation's length)."""
        return [r for r in self.capture.relations if r.type == "result_delivered"]

    def problem(self, code: TrajectoryBlock, message: str, call_id: str | None = None) -> None:
        self.problems.append(TrajectoryProblem(code=code, message=message, call_id=call_id))

    @property
    def replayed(self) -> dict[str, str]:
        """Output tool-call id -> the id the harness replays it under (`tool_id_map`)."""
        return {m.output_id: m.context_id for m in self.capture.manifest.tool_id_map or []}


def _source(capture: Capture) -> TrajectorySource:
    m = capture.manifest
    calls_file = m.files.get("calls.jsonl")
    return TrajectorySource(
        sample_id=m.sample_id,
        attempt=m.attempt,
        attempt_dir=f"capture/attempt-{m.attempt:04d}",
        capture_scope=m.capture_scope,
        harness=m.harness,
        calls_sha256=calls_file.sha256 if calls_file else None,
        capture_status=m.capture_status,
        execution_status=m.execution_status,
    )


def _record(
    capture: Capture,
    root_id: str | None,
    calls: Sequence[_RootCall],
    problems: list[TrajectoryProblem],
    segments: list[TrajectorySegment],
) -> TrajectoryRecord:
    codes = {p.code for p in problems}
    blocked = [c for c in _BLOCK_ORDER if c in codes]
    built = not (codes & _UNAVAILABLE)
    return TrajectoryRecord(
        schema_="roller.trajectory/v1",
        source=_source(capture),
        root_participant_id=root_id,
        built=built,
        export_status="blocked" if blocked else "exportable",
        export_blocked_by=blocked,
        problems=problems,
        call_ids=[c.call_id for c in calls],
        segments=segments if built else [],
    )


def build_trajectory(capture: Capture) -> TrajectoryRecord:
    """The root participant's main trajectory of one attempt (rules: module docstring)."""
    m = capture.manifest
    roots = [p for p in m.participants if p.role == "root"]
    if len(roots) != 1:
        problem = TrajectoryProblem(
            code="root_unknown",
            message=f"the manifest names {len(roots)} root participants; the main "
            "trajectory needs exactly one",
            call_id=None,
        )
        return _record(capture, None, [], [problem], [])
    root = roots[0]
    ctx = _Context(
        harness=m.harness.name,
        root_id=root.participant_id,
        capture=capture,
        participants={p.participant_id: p for p in m.participants},
    )
    calls, unreadable, in_order = _scan(ctx)
    if not calls:
        ctx.problem("no_root_calls", "the root participant made no generation call")
    ctx.problems += unreadable
    if any(p.code in _UNAVAILABLE for p in ctx.problems):
        return _record(capture, root.participant_id, calls, ctx.problems, [])

    segments: list[Segment] = []
    # a root call at a time when calls.jsonl holds them in sequence order (finalize
    # writes calls in arrival order), else all of them, sorted
    own = _own(capture, root.participant_id)
    for call in own if in_order else sorted(own, key=lambda c: c.sequence):
        history = _readable(ctx, call)
        assert history is not None  # _scan found every root call readable
        _add_call(ctx, segments, call, history)
    _check_blocks(ctx, calls, segments)
    return _record(
        capture, root.participant_id, calls, ctx.problems, [s.freeze() for s in segments]
    )


@dataclass(frozen=True)
class _RootCall:
    """What the trajectory keeps of a root call once its messages are placed."""

    call_id: str
    sequence: int
    export_status: str
    export_blocked_by: Sequence[str]


def _scan(ctx: _Context) -> tuple[list[_RootCall], list[TrajectoryProblem], bool]:
    """One pass over the calls, a call held at a time: the `unattributed_calls` problems
    (recorded), the root's generation calls in sequence order, the problems of those
    whose request is unreadable (returned: they follow `no_root_calls`), and whether
    calls.jsonl holds the root's calls in sequence order."""
    scratch = _Context(ctx.harness, ctx.root_id, ctx.capture, ctx.participants)
    roots: list[_RootCall] = []
    unreadable: dict[int, TrajectoryProblem] = {}  # by position in `roots`
    for c in ctx.capture.calls:
        if c.kind == "generation" and c.identity_status != "attributed":
            ctx.problem(
                "unattributed_calls",
                f"generation call {c.call_id} is {c.identity_status}: it may be a root turn "
                "the trajectory would silently miss",
                c.call_id,
            )
        if c.participant_id == ctx.root_id and c.kind == "generation":
            if _readable(scratch, c) is None:
                unreadable[len(roots)] = scratch.problems.pop()
            roots.append(_RootCall(c.call_id, c.sequence, c.export_status, c.export_blocked_by))
    order = sorted(range(len(roots)), key=lambda i: roots[i].sequence)  # stable, as before
    problems = [unreadable[i] for i in order if i in unreadable]
    return [roots[i] for i in order], problems, order == list(range(len(roots)))


def _own(capture: Capture, participant_id: str) -> Iterator[CallRecord]:
    return (
        c for c in capture.calls if c.participant_id == participant_id and c.kind == "generation"
    )


def _own_calls(capture: Capture, participant_id: str) -> list[CallRecord]:
    return sorted(_own(capture, participant_id), key=lambda c: c.sequence)


def _segments(
    ctx: _Context, calls: list[CallRecord], histories: list[History | None]
) -> list[Segment]:
    segments: list[Segment] = []
    for call, history in zip(calls, histories, strict=True):
        assert history is not None  # _readable recorded a problem otherwise
        _add_call(ctx, segments, call, history)
    return segments


def participant_segments(
    capture: Capture, participant_id: str
) -> tuple[list[TrajectorySegment], list[TrajectoryProblem]]:
    """Any participant's own conversation, segmented by the same rules (2-4) as the main
    trajectory — a subtask's, for exports that embed every agent (ATIF). No segments
    when one of its requests is unreadable or holds no history (`problems` says why)."""
    ctx = _Context(
        harness=capture.manifest.harness.name,
        root_id=participant_id,
        capture=capture,
        participants={p.participant_id: p for p in capture.manifest.participants},
    )
    calls = _own_calls(capture, participant_id)
    histories = [_readable(ctx, c) for c in calls]
    if any(h is None for h in histories):
        return [], ctx.problems
    return [s.freeze() for s in _segments(ctx, calls, histories)], ctx.problems


def _readable(ctx: _Context, call: CallRecord) -> History | None:
    codec = codec_named(call.protocol)
    if codec is None:
        ctx.problem(
            "unreadable_request",
            f"protocol {call.protocol!r} has no known history layout",
            call.call_id,
        )
        return None
    history = codec.history(call.context)
    if history is None:
        ctx.problem(
            "unreadable_request",
            "the request body holds no readable message list",
            call.call_id,
        )
        return None
    held = codec.server_state(call.context)
    if held:
        ctx.problem(
            "history_not_in_request",
            f"the request continues server-side state ({', '.join(held)}): its history "
            "is not in the request",
            call.call_id,
        )
        return None
    return history


def _add_call(ctx: _Context, segments: list[Segment], call: CallRecord, history: History) -> None:
    protocol = str(call.protocol)
    codec = codec_named(protocol)
    assert codec is not None  # _readable recorded a problem otherwise
    keyed = keyed_items(codec, history.items)
    keys = [k for _, k in keyed]
    segment, first_new = place(segments, protocol, call.model, history.system, keyed)
    for position in range(first_new, len(history.items)):
        item = history.items[position]
        segment.messages.append(_input_message(ctx, call, position, item))
        _note_tool_loading(ctx, codec, item, call.call_id)
    # An output that did not complete never became history (a retry resends the same
    # input): it is not an item, and the next call's input is compared without it.
    produced = codec.output_items(call.output) if call.output_complete else []
    for position, item in enumerate(produced):
        segment.messages.append(
            TrajectoryMessage(
                call_id=call.call_id,
                source="output",
                position=position,
                message=item,
                injected=False,
                injections=[],
            )
        )
        _note_tool_loading(ctx, codec, item, call.call_id)

    replayed = ctx.replayed
    as_sent_back = [as_replayed(item, replayed) for item in produced] if replayed else produced
    segment.state = keys + [k for _, k in keyed_items(codec, as_sent_back)]
    segment.last_call_id = call.call_id
    segment.requests.append(
        TrajectoryRequest(
            call_id=call.call_id,
            sequence=call.sequence,
            config=segment.config_index(history.config),
            tools=segment.tools_index(history.tools, call.call_id),
            response_id=call.response_id,
            finish_reason=call.finish_reason,
            export_status=call.export_status,
            export_blocked_by=list(call.export_blocked_by),
        )
    )


def _input_message(ctx: _Context, call: CallRecord, position: int, item: Any) -> TrajectoryMessage:
    """An input item as the trajectory keeps it: tagged when the harness injected it,
    with a problem when such an injection must bind and binds to no delivered result."""
    injected, injections = injections_of(
        ctx.harness, item, call.call_id, ctx.root_id, lambda: ctx.delivered, ctx.participants
    )
    for unbound in unbound_barring(ctx.harness, injections):
        ctx.problem(
            "notification_unbound",
            f"the injected {unbound.kind} naming {unbound.names} binds to no delivered "
            "result: which run it completes is not proven",
            call.call_id,
        )
    return TrajectoryMessage(
        call_id=call.call_id,
        source="input",
        position=position,
        message=item,
        injected=injected,
        injections=injections,
    )


def _note_tool_loading(ctx: _Context, codec: Codec, item: Any, call_id: str) -> None:
    kind = codec.loads_tools(item)
    if kind is not None:
        ctx.problem(
            "dynamic_tools",
            f"the root's history carries `{kind}`: tools were loaded at run time, so no "
            "static tool list describes its requests",
            call_id,
        )


def _check_blocks(ctx: _Context, calls: Sequence[_RootCall], segments: list[Segment]) -> None:
    for segment in segments:
        previous: int | None = None
        for request in segment.requests:
            if previous is not None and request.tools != previous:
                ctx.problem(
                    "dynamic_tools",
                    f"segment {segment.index}: the tools changed at this call (snapshot "
                    f"{previous} -> {request.tools})",
                    request.call_id,
                )
            previous = request.tools
    for note in ctx.capture.manifest.capabilities.notes:
        if note.startswith(NATIVE_BAR_PREFIX):
            body = note.removeprefix(NATIVE_BAR_PREFIX).strip()
            code: TrajectoryBlock = (
                "dynamic_tools" if body.startswith("dynamic_tools") else "native_bar"
            )
            ctx.problem(code, f"the harness adapter bars the main trajectory: {body}")
    coverage = ctx.capture.manifest.coverage
    if coverage.checked and not coverage.ok:
        ctx.problem(
            "coverage_mismatch",
            f"the native output coverage check failed ({coverage.found}/{coverage.expected}): "
            "a root turn may be missing",
        )
    for call in calls:
        if call.export_status != "exportable":
            ctx.problem(
                "root_call_blocked",
                f"root call is blocked from export ({', '.join(call.export_blocked_by)})",
                call.call_id,
            )

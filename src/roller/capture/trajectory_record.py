"""`roller.trajectory/v1`: the main trajectory of one attempt (the seed's ACTF).

Derived data, not part of the capture: `roller.export.trajectory` builds it from an
attempt's formal files (root participant only) and it is stored beside the capture as
`samples/<id>/trajectory/attempt-NNNN.json`, regenerable at any time with
`roller export trajectory`. The rules it records are in `docs/protocol.md`, "Main
trajectory". Same conventions as `roller.capture.models`: every field described, unknown
fields rejected, frozen.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from roller.capture.models import (
    CaptureStatus,
    ExecutionStatus,
    ExportBlock,
    ExportStatus,
    HarnessInfo,
    Record,
)

TRAJECTORY_SCHEMA = "roller.trajectory/v1"

# Why a main trajectory may not be exported. The first group means no trajectory could
# be built at all (`built: false`, no segments); the second blocks a built one.
TrajectoryBlock = Literal[
    "root_unknown",
    "unattributed_calls",
    "no_root_calls",
    "history_not_in_request",
    "unreadable_request",
    "root_call_blocked",
    "dynamic_tools",
    "native_bar",
    "coverage_mismatch",
    "notification_unbound",
]
SegmentStartReason = Literal[
    "first_call", "not_a_continuation", "system_changed", "protocol_changed"
]
InjectionKind = Literal[
    "task_notification",
    "system_reminder",
    "subagent_notification",
    "agent_message",
    "subagent_announce",
]


class TrajectorySource(Record):
    """The capture the trajectory was derived from."""

    sample_id: str = Field(description="Sample id.")
    attempt: int = Field(description="1-based attempt number.")
    attempt_dir: str = Field(
        description="The attempt directory relative to the sample directory "
        "(`capture/attempt-NNNN`)."
    )
    capture_scope: str = Field(description="The attempt's capture scope (part of every id).")
    harness: HarnessInfo = Field(description="What ran.")
    calls_sha256: str | None = Field(
        description="sha256 of the calls.jsonl the trajectory was built from (the "
        "manifest's `files` entry): a stored trajectory is current only while it matches."
    )
    capture_status: CaptureStatus = Field(
        description="The capture's own `capture_status`, copied for the reader."
    )
    execution_status: ExecutionStatus = Field(
        description="The harness run's `execution_status`, copied for the reader."
    )


class TrajectoryProblem(Record):
    """One reason the trajectory is unavailable or blocked, or a fact worth knowing."""

    code: TrajectoryBlock = Field(description="The block this problem causes.")
    message: str = Field(description="Human-readable explanation.")
    call_id: str | None = Field(description="The call it concerns, when there is one.")


class Injection(Record):
    """Evidence that the harness, not a person, put (part of) an input item there."""

    kind: InjectionKind = Field(
        description="`task_notification` (Claude Code background-task notification), "
        "`system_reminder` (Claude Code `<system-reminder>` text), "
        "`subagent_notification` (Codex v1), `agent_message` (Codex v2 input item), "
        "`subagent_announce` (OpenClaw's announce turn input)."
    )
    part: int | None = Field(
        description="Index of the content part carrying it; null when it is the whole item."
    )
    wrapper: str = Field(
        description="The harness wrapper as found in the request: how the part opens "
        "(`<system-reminder>`, `[SYSTEM NOTIFICATION - NOT USER INPUT]`, "
        "`<task-notification>`, `<subagent_notification>`) or an item type (`agent_message`)."
    )
    names: str | None = Field(
        description="What the wrapper names: the tool-call id (`<tool-use-id>`) or the "
        "sending agent (`agent_path`, `author`); null when it names nothing."
    )
    relation_ids: list[str] = Field(
        description="`result_delivered` relations of the root that bind this notification "
        "(same tool-call id or child, delivered into the call that first carried it); "
        "empty when only the wrapper identifies it."
    )


class TrajectoryMessage(Record):
    """One item of the conversation, verbatim in the protocol's own shape."""

    call_id: str = Field(
        description="The root call whose input first carried this item, or whose output it is."
    )
    source: Literal["input", "output"] = Field(
        description="`input`: taken from that call's request; `output`: that call's "
        "response, as the protocol's history item (Anthropic `{role, content}`, Chat "
        "`choices[0].message`, a Responses output item, Gemini `candidates[0].content`)."
    )
    position: int = Field(
        description="Index of the item in that call's input list, or among its output items."
    )
    message: Any = Field(description="The item exactly as sent or received.")
    injected: bool = Field(
        description="Whether every part of this input item was injected by the harness "
        "(see `injections`); it stays the input item it was, never relabelled."
    )
    injections: list[Injection] = Field(
        description="Harness-injected parts of this item, each with its evidence."
    )


class ToolSnapshot(Record):
    """A tool configuration exactly as root requests sent it."""

    tools: Any = Field(description="The request's `tools` value verbatim; null when absent.")
    call_ids: list[str] = Field(description="The calls that sent exactly this value.")


class TrajectoryRequest(Record):
    """One root model call of a segment."""

    call_id: str = Field(description="The call (calls.jsonl).")
    sequence: int = Field(description="Its order of arrival at the proxy.")
    config: int = Field(description="Index into the segment's `configs`.")
    tools: int = Field(description="Index into the segment's `tool_snapshots`.")
    response_id: str | None = Field(description="The provider's response id.")
    finish_reason: str | None = Field(description="The protocol's own stop/finish reason.")
    export_status: ExportStatus = Field(description="The call's per-call export status.")
    export_blocked_by: list[ExportBlock] = Field(description="Why the call is blocked.")


class SegmentStart(Record):
    """Why a segment begins where it does."""

    reason: SegmentStartReason = Field(
        description="`first_call`; `not_a_continuation`: the call's input does not extend "
        "the history (input + output) of any earlier root call (compaction, a side "
        "request such as title generation, edited history); `system_changed`: the "
        "messages extend but the system prompt/instructions differ; "
        "`protocol_changed`: the call uses another protocol."
    )
    previous_segment: int | None = Field(
        description="The segment compared against (the latest one); null for the first."
    )
    detail: str | None = Field(description="Where the history diverged, when it did.")


class TrajectorySegment(Record):
    """A maximal run of root calls each extending the previous one's history."""

    index: int = Field(description="0-based, in order of the segment's first call.")
    protocol: str = Field(description="The protocol of every call in the segment.")
    model: str | None = Field(description="The model the segment's first call asked for.")
    start: SegmentStart = Field(description="Why the segment starts here.")
    configs: list[Any] = Field(
        description="Distinct request configurations, in order of first use: the request "
        "body without the message list and without `tools` (system/instructions, "
        "sampling parameters, tool_choice, …), verbatim."
    )
    tool_snapshots: list[ToolSnapshot] = Field(
        description="Distinct tool configurations, in order of first use. More than one "
        "means the tools changed between calls (`dynamic_tools`)."
    )
    requests: list[TrajectoryRequest] = Field(description="The segment's calls, in order.")
    messages: list[TrajectoryMessage] = Field(
        description="The conversation: the first call's input, then for every call its "
        "output followed by what the next call's input added, ending with the last "
        "call's output."
    )


class TrajectoryRecord(Record):
    """`roller.trajectory/v1`: the root participant's main trajectory of one attempt."""

    schema_: Literal["roller.trajectory/v1"] = Field(alias="schema", description="Record schema.")
    source: TrajectorySource = Field(description="The capture it was derived from.")
    root_participant_id: str | None = Field(
        description="The root participant; null when the capture names no single root."
    )
    built: bool = Field(
        description="Whether a trajectory could be built; false means `segments` is empty "
        "and `problems` says why."
    )
    export_status: ExportStatus = Field(description="May it enter main-trajectory export?")
    export_blocked_by: list[TrajectoryBlock] = Field(
        description="Why it is blocked (empty when exportable)."
    )
    problems: list[TrajectoryProblem] = Field(description="Each reason, explained.")
    call_ids: list[str] = Field(
        description="The root's generation calls, in order; side requests (token counts, "
        "model lists) are not part of a trajectory."
    )
    segments: list[TrajectorySegment] = Field(description="The trajectory, segment by segment.")

"""The manifest (`roller.capture/v1`, manifest.json) and what it holds: participants and
their copied context, capabilities, coverage, lifecycle, files, counts, turns, the tool-id
mapping. The per-call lists (call ids, evidence) are typed `Sequence`: read from JSON
they are lists, and `roller.capture.manifest_json` keeps long ones as numbers
(`numbered`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from roller.capture.models.call import CaptureErrorRecord
from roller.capture.models.numbered import EvidenceList, IdList
from roller.capture.models.vocabulary import (
    CaptureStatus,
    ExecutionStatus,
    IdentityDeclaration,
    LifecycleStatus,
    OutputCoverage,
    Record,
    Retention,
    StorageLayout,
    SubtaskCapability,
    TurnStatus,
    absent,
)


class InheritedContextRecord(Record):
    """The copied prefix of a forked child's requests (`ParticipantRecord.inherited_context`).

    Every request of the child resends it as sent (calls keep their whole context); a
    consumer of the child's own turns skips the first `items` history items.
    """

    from_participant_id: str | None = Field(
        description="The participant whose history was copied (null if not captured)."
    )
    items: int = Field(
        description="Leading history items of each of the child's requests that are the copy."
    )
    checked: bool = Field(
        description="Whether the child's first request starts with exactly those items of "
        "one of the source participant's requests (same messages, compared as the "
        "protocol's history items)."
    )
    evidence: EvidenceList = Field(description="Where the copy is known from.")
    note: str | None = Field(description="Why the check failed, when it did.")


class ParticipantRecord(Record):
    """One native executor: the root agent or one subagent."""

    participant_id: str = Field(description="Opaque id, valid within one attempt.")
    role: Literal["root", "child"] = Field(description="Root agent or subtask.")
    parent_participant_id: str | None = Field(description="Parent participant (children).")
    depth: int = Field(description="0 for the root, 1 for its children, …")
    native_ids: dict[str, str] = Field(
        description="Native identifiers (session id, agent id, thread id, …)."
    )
    name: str | None = Field(description="Native agent type / name, when known.")
    state: Literal["completed", "failed", "running", "unknown"] = Field(
        description="Native execution state at collection time."
    )
    call_ids: IdList = Field(description="Calls attributed to this participant, in order.")
    evidence: EvidenceList = Field(description="Where the participant is known from.")
    inherited_context: InheritedContextRecord | None = Field(
        default=None,
        exclude_if=absent,
        description="A child started from a copy of another participant's history (a "
        "fork): the leading items of its requests that are that copy. Absent otherwise.",
    )


class Capabilities(Record):
    """What this harness profile can show and how outputs were cross-checked."""

    subtasks: SubtaskCapability = Field(description="Whether the profile can delegate.")
    native_output_coverage: OutputCoverage = Field(
        description="How captured outputs were cross-checked against native logs. "
        "A count check is weaker than a per-id check."
    )
    notes: list[str] = Field(description="Free-form remarks on the checks' strength.")
    identity_evidence: IdentityDeclaration | None = Field(
        default=None,
        exclude_if=absent,
        description="`declared_single_agent`: the user declared the command one agent "
        "(`--single-agent`) and no call's x-roller-* headers declared otherwise, so every "
        "call belongs to the one root participant on that declaration. Absent otherwise.",
    )


class Coverage(Record):
    """Result of the native output coverage check."""

    basis: OutputCoverage = Field(description="The check that ran.")
    checked: bool = Field(description="Whether native evidence was available to check.")
    ok: bool = Field(description="Whether every native output has a captured call and back.")
    expected: int = Field(description="Outputs the native logs record.")
    found: int = Field(description="Of those, outputs matched by a captured call.")
    problems: list[str] = Field(description="Each mismatch, described.")


class Lifecycle(Record):
    """Whether every participant had finished when the capture closed."""

    status: LifecycleStatus = Field(description="complete / pending / unknown / unsupported.")
    pending_participant_ids: list[str] = Field(description="Participants not yet finished.")


class HarnessInfo(Record):
    name: str = Field(description="Harness name (`claude-code`, `opencode`, `generic`, …).")
    version: str | None = Field(description="The version actually run.")
    profile: str | None = Field(description="Bundled profile / configuration name.")


class FileEntry(Record):
    sha256: str = Field(description="sha256 of the file bytes.")
    bytes: int = Field(description="File size.")
    lines: int = Field(description="Number of newline-terminated lines.")


class Counts(Record):
    calls: int = Field(description="Calls in calls.jsonl.")
    generation_calls: int = Field(description="Calls of kind `generation`.")
    attributed_calls: int = Field(description="Calls with identity `attributed`.")
    unattributed_calls: int = Field(description="Calls with identity `unattributed`.")
    ambiguous_calls: int = Field(description="Calls with identity `ambiguous`.")
    exportable_calls: int = Field(description="Calls with export `exportable`.")
    relations: int = Field(description="Relations in relations.jsonl.")
    participants: int = Field(description="Participants in the manifest.")


class ToolIdMapping(Record):
    """One tool-call id the harness sent back under another id in later requests."""

    call_id: str = Field(description="The call whose output emitted the tool call.")
    output_id: str = Field(description="The tool-call id as that output carries it.")
    context_id: str = Field(
        description="The id the harness replays it under in later requests (OpenClaw: "
        "non-alphanumerics removed for Chat Completions and Messages)."
    )
    seen: bool = Field(
        description="Whether a later call of the same participant carries a result under "
        "`context_id`."
    )


class TurnRecord(Record):
    """One harness run of a multi-turn sample (`roller collect --prompt A --prompt B`)."""

    turn: int = Field(description="1-based turn number; turn n was given the n-th prompt.")
    execution_status: TurnStatus = Field(
        description="How this turn's harness run ended, or `not_run` when roller stopped "
        "before it (an earlier turn did not complete, or its root was not confirmed)."
    )
    exit_code: int | None = Field(description="Harness exit code; null when killed or not run.")
    started_at: str | None = Field(description="When the turn was launched (RFC 3339).")
    ended_at: str | None = Field(description="When the turn's harness ended (RFC 3339).")
    resumed_root: str | None = Field(
        description="The native id of the root conversation this turn resumed (Claude Code "
        "session id, OpenCode session id, Codex thread id), confirmed from the native logs "
        "after the previous turn; null for the first turn and for a turn not run."
    )
    call_ids: IdList = Field(
        description="Calls whose request reached the proxy after this turn was launched "
        "and before the next one was (turns run one at a time, each drained first)."
    )
    problem: str | None = Field(description="Why the turn failed or did not run.")


class Manifest(Record):
    """`roller.capture/v1`: one attempt of one sample. Written last, atomically."""

    schema_: Literal["roller.capture/v1"] = Field(alias="schema", description="Record schema.")
    storage_layout: StorageLayout = Field(
        description="Layout of the attempt directory: `compact/v2` (contexts inside "
        "calls.jsonl) or `compact/v3` (contexts content-addressed in contexts.blobs)."
    )
    capture_scope: str = Field(description="Random scope of this attempt, part of every id.")
    harness: HarnessInfo = Field(description="What ran.")
    sample_id: str = Field(description="The sample this attempt belongs to.")
    attempt: int = Field(description="1-based attempt number.")
    started_at: str = Field(description="When the harness was launched (RFC 3339).")
    ended_at: str = Field(description="When the harness ended (RFC 3339).")
    exit_code: int | None = Field(description="Harness exit code; null when killed.")
    execution_status: ExecutionStatus = Field(description="Did the harness run finish?")
    capture_status: CaptureStatus = Field(description="Is the capture as a whole complete?")
    capture_errors: list[CaptureErrorRecord] = Field(description="Capture-level problems.")
    participants: list[ParticipantRecord] = Field(description="Root and subtask participants.")
    capabilities: Capabilities = Field(description="What the harness profile can show.")
    coverage: Coverage = Field(description="Native output coverage check.")
    lifecycle: Lifecycle | None = Field(description="Whether every participant finished.")
    debug_retention: Retention = Field(description="Retention policy for raw/.")
    raw_retained: bool = Field(description="Whether raw/ is still present.")
    counts: Counts = Field(description="Counts of the records.")
    files: dict[str, FileEntry] = Field(
        description="sha256, size and line count of each formal file "
        "(calls.jsonl, relations.jsonl)."
    )
    tool_id_map: list[ToolIdMapping] | None = Field(
        default=None,
        exclude_if=absent,
        description="The normalization of tool-call ids the harness rewrites between an "
        "output and the later requests that carry its results, built from the actual "
        "outputs; absent when no id was rewritten.",
    )
    turns: list[TurnRecord] | None = Field(
        default=None,
        exclude_if=absent,
        description="The harness run of each turn of a multi-turn sample, in order; absent "
        "for a single prompt. The top-level times and exit code span all turns run.",
    )

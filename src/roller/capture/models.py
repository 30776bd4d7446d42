"""Strict persisted records of the capture protocol (`docs/protocol.md`).

These pydantic models ARE the on-disk contract: `roller.call/v1` (calls.jsonl),
`roller.relation/v1` (relations.jsonl), `roller.capture/v1` (manifest.json), plus the run
and sample files. Rules kept here:
- every field is described (the descriptions become the JSON Schemas under `schemas/`);
- unknown fields are rejected on read (`extra="forbid"`), types are strict;
- records are frozen; values in flight elsewhere are dataclasses, never these.
A format change bumps the schema string and adds a reader for the old one (see
`docs/protocol.md`, "Versions").
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CALL_SCHEMA = "roller.call/v1"
RELATION_SCHEMA = "roller.relation/v1"
CAPTURE_SCHEMA = "roller.capture/v1"
RUN_SCHEMA = "roller.run/v1"
SAMPLE_SCHEMA = "roller.sample/v1"
ATTEMPT_SCHEMA = "roller.attempt/v1"
STORAGE_LAYOUT = "compact/v2"

ExecutionStatus = Literal["completed", "failed", "interrupted"]
ResponseCaptureStatus = Literal["complete", "partial", "missing"]
IdentityStatus = Literal["attributed", "unattributed", "ambiguous"]
CaptureStatus = Literal["complete", "partial"]
ExportStatus = Literal["exportable", "blocked"]
RelationType = Literal[
    "spawn",
    "result_delivered",
    "child_completed",
    "child_failed",
    "result_in_context",
    "launch_acknowledged",
    "launch_ack_in_context",
]
RelationStatus = Literal["established", "unknown"]
# A call's wire parent against the native parent of its participant (`Attribution`).
ParentCrossCheck = Literal["agree", "disagree", "absent"]
Retention = Literal["on-error", "full", "off"]
CallKind = Literal["generation", "token_count", "model_list", "other"]
LifecycleStatus = Literal["complete", "pending", "unknown", "unsupported"]
SubtaskCapability = Literal["supported", "not_available_in_bundled_profile", "unknown"]
# One turn of a multi-turn sample: how its harness run ended, or that it never ran.
TurnStatus = Literal["completed", "failed", "interrupted", "not_run"]
# Identity evidence that is neither native nor on the wire: the user's declaration.
IdentityDeclaration = Literal["declared_single_agent"]
OutputCoverage = Literal[
    "per_message_id",
    "per_session_assistant_count",
    "per_session_count_and_tool_call_ids",
    "token_usage_count",
    "per_response_id",
    "stream_context_count",
    "none",
]

# Reasons a call is blocked from per-call export; `docs/protocol.md` defines each.
ExportBlock = Literal[
    "not_a_generation",
    "execution_not_completed",
    "response_incomplete",
    "output_incomplete",
    "tool_call_without_identity",
    "identity_unattributed",
    "identity_ambiguous",
    "model_mismatch",
    "response_model_missing",
    "capture_errors",
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


StorageLayout = Literal["compact/v2", "compact/v3"]
STORAGE_LAYOUTS: tuple[StorageLayout, ...] = ("compact/v2", "compact/v3")


def _absent(value: object) -> bool:
    """An optional field added after v1 shipped is left out when unset, so a record that
    does not use it is byte for byte what it was before the field existed."""
    return value is None


Header = tuple[str, str]


class CaptureErrorRecord(_Record):
    """A problem met while capturing or finalizing, kept as data."""

    code: str = Field(description="Stable machine-readable code, e.g. `context_not_json`.")
    message: str = Field(description="Human-readable explanation.")


class Evidence(_Record):
    """Where a fact came from: a native file (and the event/part in it) or a call."""

    source: str = Field(
        description="`native:<path relative to raw/native>` for a native log file, "
        "`call:<call_id>` for a captured call, `tape:<exchange id>` for the tape, "
        "`declared:single_agent` for the user's declaration that the command is one "
        "agent (`roller collect --harness generic --single-agent`)."
    )
    ref: str | None = Field(
        description="The event/part/line id inside the source (e.g. a transcript line "
        "uuid, a part id, a tool-call id), or null when the whole source is the evidence."
    )
    retained: bool = Field(
        description="Whether the source is still on disk. Native sources live under raw/ "
        "and are false once debug material was cleaned; call sources are always true."
    )


class RequestInfo(_Record):
    """The HTTP request line and headers as received, with secrets removed."""

    method: str = Field(description="HTTP method.")
    path: str = Field(description="Request path without the query string.")
    query: list[Header] = Field(
        description="Query parameters as [name, value] pairs; secret parameters removed."
    )
    headers: list[Header] = Field(
        description="Request headers as [name, value] pairs in arrival order; "
        "authentication headers and roller's own x-roller-* headers removed."
    )
    redacted: list[str] = Field(
        description="Names (never values) of the headers and query parameters removed."
    )
    received_at: str = Field(description="When the proxy received the request (RFC 3339, UTC).")


class ResponseInfo(_Record):
    """The HTTP response as the upstream sent it and how it was recorded."""

    status: int | None = Field(description="HTTP status; null when no response arrived.")
    headers: list[Header] = Field(description="Response headers as [name, value] pairs.")
    streamed: bool = Field(description="Whether the body was a server-sent-event stream.")
    outcome: str = Field(
        description="How the exchange ended at the proxy: `ok`, `upstream_connect_error`, "
        "`upstream_disconnected`, `upstream_timeout`, `client_disconnected`, `no_upstream`, "
        "`rejected`, `proxy_error`, or `in_flight` when the tape stopped first."
    )
    raw_path: str | None = Field(
        description="The raw response body file relative to the attempt directory "
        "(under raw/), or null once debug material was cleaned."
    )
    raw_sha256: str | None = Field(description="sha256 of the raw response body bytes.")
    bytes: int = Field(description="Number of response body bytes received.")
    content_encoding: str | None = Field(
        description="The response `content-encoding`, when the body was compressed."
    )
    first_byte_at: str | None = Field(description="Arrival of the first body byte (RFC 3339).")
    ended_at: str | None = Field(description="End of the exchange at the proxy (RFC 3339).")


class EmittedToolRef(_Record):
    """A tool call the output emits."""

    id: str | None = Field(
        description="Tool-call id: Anthropic tool_use.id, Chat tool_calls[].id, "
        "Responses call_id, Gemini functionCall.id."
    )
    name: str | None = Field(description="Tool name.")
    item_id: str | None = Field(description="Responses function_call item id (`fc_…`).")
    namespace: str | None = Field(description="Responses namespace of the tool, if any.")
    ref: str | None = Field(
        description="Native reference: `call_id|item_id`, or the id; when the output carries "
        "no id (Gemini), the id the harness assigned to this tool call (native log)."
    )


class ResultToolRef(_Record):
    """A tool result the request context carries."""

    id: str | None = Field(description="The tool-call id the result answers.")
    name: str | None = Field(description="Tool name when the protocol carries it.")
    item_id: str | None = Field(description="Responses function_call_output item id.")
    message_index: int = Field(description="Index of the carrying message/input item.")
    is_error: bool | None = Field(description="Whether the result is marked as an error.")


class ToolRefs(_Record):
    """Tool references of one call."""

    emitted: list[EmittedToolRef] = Field(description="Tool calls the output emits.")
    results: list[ResultToolRef] = Field(description="Tool results the context carries.")


class UsageInfo(_Record):
    """Token usage normalized across protocols (the provider's own object is in `output`)."""

    input_tokens: int | None = Field(description="Prompt tokens (uncached part).")
    output_tokens: int | None = Field(description="Completion tokens.")
    cache_read_tokens: int | None = Field(description="Prompt tokens read from cache.")
    cache_write_tokens: int | None = Field(description="Prompt tokens written to cache.")
    total_tokens: int | None = Field(description="Total tokens as reported or summed.")


class Attribution(_Record):
    """How the call's participant was decided."""

    basis: str = Field(
        description="`native:<kind>` (e.g. native:response_id, native:session_id), "
        "`wire:<rule>` (e.g. wire:roller-headers), or `none`."
    )
    key: str | None = Field(description="The join value used (response id, session id, …).")
    wire_participant_key: str | None = Field(
        description="Participant key derived from wire headers alone, kept for cross-checking."
    )
    cross_check: Literal["agree", "disagree", "absent", "not_applicable"] = Field(
        description="Whether wire identity agrees with the native attribution."
    )
    note: str | None = Field(description="Why the call is unattributed or ambiguous.")
    parent_cross_check: ParentCrossCheck | None = Field(
        default=None,
        description="Whether the parent the wire names (e.g. `x-parent-session-id`, "
        "`x-codex-parent-thread-id`, Claude Code's parent agent) is the native parent of "
        "the participant the call was attributed to: `agree`; `disagree` (another parent, "
        "or the native evidence says the participant is a root); `absent` (the native "
        "evidence names no parent for this child). Null when no comparison was made: the "
        "call is not attributed by native evidence, or its wire names no parent. Never "
        "changes the attribution or the participant's parent; a `disagree` is also a "
        "`parent_disagreement` capture error.",
    )


class CallRecord(_Record):
    """`roller.call/v1`: one real HTTP model request and its response."""

    schema_: Literal["roller.call/v1"] = Field(alias="schema", description="Record schema.")
    call_id: str = Field(description="Opaque id, unique across captures (has the capture scope).")
    sequence: int = Field(description="0-based order of arrival at the proxy in this attempt.")
    exchange_id: str = Field(description="The exchange id in the tape this call came from.")
    participant_id: str | None = Field(
        description="Owning participant (manifest `participants`), null when not attributed."
    )
    kind: CallKind = Field(
        description="`generation` for a model generation endpoint; `token_count`, "
        "`model_list` or `other` for side requests, recorded but never exported."
    )
    protocol: str | None = Field(
        description="`anthropic-messages`, `openai-chat-completions`, `openai-responses`, "
        "`gemini`, decided from the endpoint actually hit; null when unrecognised."
    )
    json_mode: bool = Field(
        description="The request asked for a JSON/structured reply (e.g. a router call)."
    )
    request: RequestInfo = Field(description="Request line and headers.")
    context: Any = Field(
        description="The complete request body as sent upstream, parsed as JSON; null "
        "when the body is empty or not JSON (see `errors`). In a compact/v3 capture the "
        "file holds null and `context_ref` instead; readers give the value."
    )
    context_ref: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="compact/v3 only: the digest of the request body's root node in "
        "`contexts.blobs` (docs/protocol.md, compact/v3). Readers rebuild the exact "
        "body, check it against `context_sha256`, and give `context` from it.",
    )
    context_sha256: str = Field(description="sha256 of the exact request body bytes.")
    context_bytes: int = Field(description="Length of the request body in bytes.")
    output: Any = Field(
        description="The response reassembled into the protocol's non-streaming shape; "
        "null when nothing usable arrived."
    )
    output_complete: bool = Field(
        description="Whether reassembly reached the protocol's terminal event/shape."
    )
    output_incomplete_reason: str | None = Field(
        description="Why the output is incomplete (e.g. stream ended before message_stop)."
    )
    output_problems: list[str] = Field(
        description="Non-fatal findings of reassembly (e.g. tool input that is not JSON; "
        "the raw string is kept in `output`)."
    )
    output_unmerged: list[Any] = Field(
        description="Stream events that could not be folded into `output`, verbatim, so "
        "nothing the provider sent is dropped."
    )
    provider_error: Any = Field(description="A provider error object (error event or body).")
    response: ResponseInfo = Field(description="HTTP response facts and the raw body file.")
    model: str | None = Field(description="The model the request asked for.")
    response_model: str | None = Field(description="The model the provider said it used.")
    response_id: str | None = Field(description="The provider's response id.")
    finish_reason: str | None = Field(description="The protocol's own stop/finish reason.")
    usage: UsageInfo | None = Field(description="Normalized token usage.")
    stream: bool = Field(description="Whether the request asked for a streamed response.")
    native_identity: dict[str, str] = Field(
        description="Identity evidence from the wire (session id, agent id, parent id, "
        "thread id, run id …), after roller's own correlation headers were removed."
    )
    attribution: Attribution = Field(description="How the participant was decided.")
    tool_refs: ToolRefs = Field(description="Tool references of this call.")
    execution_status: ExecutionStatus = Field(description="Did the call finish executing?")
    response_capture_status: ResponseCaptureStatus = Field(
        description="Was the response written to disk completely?"
    )
    identity_status: IdentityStatus = Field(description="Can the owning participant be determined?")
    capture_status: CaptureStatus = Field(description="Is this record complete?")
    export_status: ExportStatus = Field(description="May it enter per-call export?")
    export_blocked_by: list[ExportBlock] = Field(
        description="Why export is blocked (empty when exportable)."
    )
    errors: list[CaptureErrorRecord] = Field(description="Capture errors of this call.")


class ModelToolRef(_Record):
    """Both halves of a Responses tool reference; both must match the HTTP output."""

    call_id: str = Field(description="The function_call `call_id`.")
    item_id: str = Field(description="The function_call item `id` (`fc_…`).")
    matched: bool = Field(
        description="Whether one output item in the parent call carries both values."
    )


class RelationRecord(_Record):
    """`roller.relation/v1`: one evidence-backed link between participants and calls."""

    schema_: Literal["roller.relation/v1"] = Field(alias="schema", description="Record schema.")
    relation_id: str = Field(description="Opaque id, unique across captures.")
    type: RelationType = Field(description="What the relation asserts (docs/protocol.md).")
    status: RelationStatus = Field(
        description="`established` when every required piece of evidence was found; "
        "`unknown` when the relation is asserted natively but could not be bound uniquely."
    )
    parent_participant_id: str | None = Field(description="The delegating participant.")
    child_participant_id: str | None = Field(description="The subtask participant, if any.")
    source_call_id: str | None = Field(
        description="The call whose output emitted the tool call (spawn, result_in_context)."
    )
    target_call_id: str | None = Field(
        description="The later call whose input holds the result / acknowledgement / "
        "notification (result_in_context, launch_ack_in_context, result_delivered)."
    )
    tool_call_id: str | None = Field(
        description="The native tool-call id (Responses: `call_id|item_id`)."
    )
    model_tool_ref: ModelToolRef | None = Field(
        description="For Responses tool calls: both halves, checked against the output."
    )
    evidence: list[Evidence] = Field(description="Sources of the relation.")
    note: str | None = Field(description="Why the relation is unknown, when it is.")


class InheritedContextRecord(_Record):
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
    evidence: list[Evidence] = Field(description="Where the copy is known from.")
    note: str | None = Field(description="Why the check failed, when it did.")


class ParticipantRecord(_Record):
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
    call_ids: list[str] = Field(description="Calls attributed to this participant, in order.")
    evidence: list[Evidence] = Field(description="Where the participant is known from.")
    inherited_context: InheritedContextRecord | None = Field(
        default=None,
        exclude_if=_absent,
        description="A child started from a copy of another participant's history (a "
        "fork): the leading items of its requests that are that copy. Absent otherwise.",
    )


class Capabilities(_Record):
    """What this harness profile can show and how outputs were cross-checked."""

    subtasks: SubtaskCapability = Field(description="Whether the profile can delegate.")
    native_output_coverage: OutputCoverage = Field(
        description="How captured outputs were cross-checked against native logs. "
        "A count check is weaker than a per-id check."
    )
    notes: list[str] = Field(description="Free-form remarks on the checks' strength.")
    identity_evidence: IdentityDeclaration | None = Field(
        default=None,
        exclude_if=_absent,
        description="`declared_single_agent`: the user declared the command one agent "
        "(`--single-agent`) and no call's x-roller-* headers declared otherwise, so every "
        "call belongs to the one root participant on that declaration. Absent otherwise.",
    )


class Coverage(_Record):
    """Result of the native output coverage check."""

    basis: OutputCoverage = Field(description="The check that ran.")
    checked: bool = Field(description="Whether native evidence was available to check.")
    ok: bool = Field(description="Whether every native output has a captured call and back.")
    expected: int = Field(description="Outputs the native logs record.")
    found: int = Field(description="Of those, outputs matched by a captured call.")
    problems: list[str] = Field(description="Each mismatch, described.")


class Lifecycle(_Record):
    """Whether every participant had finished when the capture closed."""

    status: LifecycleStatus = Field(description="complete / pending / unknown / unsupported.")
    pending_participant_ids: list[str] = Field(description="Participants not yet finished.")


class HarnessInfo(_Record):
    name: str = Field(description="Harness name (`claude-code`, `opencode`, `generic`, …).")
    version: str | None = Field(description="The version actually run.")
    profile: str | None = Field(description="Bundled profile / configuration name.")


class FileEntry(_Record):
    sha256: str = Field(description="sha256 of the file bytes.")
    bytes: int = Field(description="File size.")
    lines: int = Field(description="Number of newline-terminated lines.")


class Counts(_Record):
    calls: int = Field(description="Calls in calls.jsonl.")
    generation_calls: int = Field(description="Calls of kind `generation`.")
    attributed_calls: int = Field(description="Calls with identity `attributed`.")
    unattributed_calls: int = Field(description="Calls with identity `unattributed`.")
    ambiguous_calls: int = Field(description="Calls with identity `ambiguous`.")
    exportable_calls: int = Field(description="Calls with export `exportable`.")
    relations: int = Field(description="Relations in relations.jsonl.")
    participants: int = Field(description="Participants in the manifest.")


class TurnRecord(_Record):
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
    call_ids: list[str] = Field(
        description="Calls whose request reached the proxy after this turn was launched "
        "and before the next one was (turns run one at a time, each drained first)."
    )
    problem: str | None = Field(description="Why the turn failed or did not run.")


class Manifest(_Record):
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
    turns: list[TurnRecord] | None = Field(
        default=None,
        exclude_if=_absent,
        description="The harness run of each turn of a multi-turn sample, in order; absent "
        "for a single prompt. The top-level times and exit code span all turns run.",
    )


class RunSettings(_Record):
    """How every sample of a run is launched: what `roller collect --resume` continues with."""

    model: str | None = Field(description="`--model`; a task's own `model` wins.")
    options: dict[str, str] = Field(
        description="`--option KEY=VALUE`s; a task's own `options` win key by key."
    )
    command: list[str] | None = Field(description="The command after `--` (generic harness).")
    timeout_s: float = Field(description="`--timeout` per harness run (per turn).")
    attempts: int = Field(
        description="`--attempts`: how many attempts a failing sample gets (docs/collect.md)."
    )
    single_agent: bool = Field(
        description="`--single-agent`: the command is declared one agent (generic)."
    )


class RunConfig(_Record):
    """`run.json`: how a run was collected. Resume refuses to mix modes."""

    schema_: Literal["roller.run/v1"] = Field(alias="schema", description="Record schema.")
    created_at: str = Field(description="When the run directory was created (RFC 3339).")
    roller_version: str = Field(description="roller version that created the run.")
    harness: str = Field(description="Harness name.")
    harness_version: str | None = Field(description="Harness version requested.")
    api_base: str = Field(description="Upstream: a URL (credentials removed) or `mock:SCENARIO`.")
    capture_calls: bool = Field(description="Whether subagent call capture mode is on.")
    capture_debug: Retention = Field(description="Debug retention policy.")
    settings: RunSettings | None = Field(
        default=None,
        exclude_if=_absent,
        description="How samples are launched, so `--resume` needs nothing but the run "
        "directory; absent in run directories written before resume existed.",
    )


class SampleInfo(_Record):
    """`sample.json`: the task as given."""

    schema_: Literal["roller.sample/v1"] = Field(alias="schema", description="Record schema.")
    sample_id: str = Field(description="Sample id (directory name).")
    prompt: str | None = Field(description="The prompt given to the harness, if any.")
    command: list[str] | None = Field(description="The command run (generic harness).")
    created_at: str = Field(description="When the sample was created (RFC 3339).")
    follow_up_prompts: list[str] | None = Field(
        default=None,
        exclude_if=_absent,
        description="The prompts of the later turns of a multi-turn sample, in order; each "
        "resumes the conversation `prompt` started. Absent for a single prompt.",
    )
    model: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="The task's own model (tasks file `model`), over the run's; absent if none.",
    )
    options: dict[str, str] | None = Field(
        default=None,
        exclude_if=_absent,
        description="The task's own launch options (tasks file `options`); absent if none.",
    )
    files: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="The task's `files` folder as the tasks file named it; its copy is "
        "`RUN_DIR/task-files/<id>/`, copied into the work dir before each attempt.",
    )


class TurnInputs(_Record):
    """One turn of a multi-turn attempt, as `roller collect` ran it."""

    turn: int = Field(description="1-based turn number.")
    resumed_root: str | None = Field(
        description="The confirmed native root id this turn resumed; null for turn 1."
    )
    started_ns: int | None = Field(
        description="When roller launched this turn (wall clock ns, the clock of the tape's "
        "frame times); null when the turn did not run."
    )
    ended_ns: int | None = Field(description="When this turn's harness ended (ns).")
    exit_code: int | None = Field(description="Exit code; null when killed or not run.")
    timed_out: bool = Field(description="Whether roller killed this turn at its timeout.")
    launch_error: str | None = Field(description="Why this turn could not be started.")
    not_run: str | None = Field(description="Why this turn did not run, when it did not.")


class AttemptInputs(_Record):
    """`raw/attempt.json`: what finalize needs besides the tape and native logs.

    Written when the attempt starts and completed when the harness ends, so
    `roller finalize ATTEMPT_DIR` can re-run finalize byte-identically.
    """

    schema_: Literal["roller.attempt/v1"] = Field(alias="schema", description="Record schema.")
    capture_scope: str = Field(description="Random scope of the attempt, part of every id.")
    sample_id: str = Field(description="Sample id.")
    attempt: int = Field(description="1-based attempt number.")
    harness: HarnessInfo = Field(description="What ran.")
    debug_retention: Retention = Field(description="Retention policy for raw/.")
    started_at: str = Field(description="Harness launch time (RFC 3339).")
    ended_at: str | None = Field(description="Harness end time; null while running.")
    exit_code: int | None = Field(description="Exit code; null when killed or not started.")
    timed_out: bool = Field(description="Whether roller killed the harness at its timeout.")
    launch_error: str | None = Field(description="Why the harness could not be started.")
    turns: list[TurnInputs] | None = Field(
        default=None,
        exclude_if=_absent,
        description="Each turn of a multi-turn sample as run; absent for a single prompt. "
        "The fields above then describe the last turn run (times: first start, last end).",
    )
    declared_single_agent: bool | None = Field(
        default=None,
        exclude_if=_absent,
        description="True when the user declared the command one agent (`roller collect "
        "--harness generic --single-agent`): calls without x-roller-* identity belong to "
        "one root participant, unless some call's headers declare participants. Absent "
        "otherwise.",
    )
    storage_layout: StorageLayout | None = Field(
        default=None,
        exclude_if=_absent,
        description="The layout to publish (`roller collect --storage-layout`); absent: "
        "compact/v2. `roller finalize` re-publishes in it unless told otherwise.",
    )

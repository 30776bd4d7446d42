"""The call record (`roller.call/v1`, one line of calls.jsonl) and its parts: the request
and response as sent, usage, tool references, attribution, capture errors, evidence."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from roller.capture.models.vocabulary import (
    CallKind,
    CaptureStatus,
    ExecutionStatus,
    ExportBlock,
    ExportStatus,
    Header,
    IdentityStatus,
    ParentCrossCheck,
    Record,
    ResponseCaptureStatus,
    absent,
)


class CaptureErrorRecord(Record):
    """A problem met while capturing or finalizing, kept as data."""

    code: str = Field(description="Stable machine-readable code, e.g. `context_not_json`.")
    message: str = Field(description="Human-readable explanation.")


class Evidence(Record):
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


class RequestInfo(Record):
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


class ResponseInfo(Record):
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


class EmittedToolRef(Record):
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


class ResultToolRef(Record):
    """A tool result the request context carries."""

    id: str | None = Field(description="The tool-call id the result answers.")
    name: str | None = Field(description="Tool name when the protocol carries it.")
    item_id: str | None = Field(description="Responses function_call_output item id.")
    message_index: int = Field(description="Index of the carrying message/input item.")
    is_error: bool | None = Field(description="Whether the result is marked as an error.")


class ToolRefs(Record):
    """Tool references of one call."""

    emitted: list[EmittedToolRef] = Field(description="Tool calls the output emits.")
    results: list[ResultToolRef] = Field(description="Tool results the context carries.")


class UsageInfo(Record):
    """Token usage normalized across protocols (the provider's own object is in `output`)."""

    input_tokens: int | None = Field(description="Prompt tokens (uncached part).")
    output_tokens: int | None = Field(description="Completion tokens.")
    cache_read_tokens: int | None = Field(description="Prompt tokens read from cache.")
    cache_write_tokens: int | None = Field(description="Prompt tokens written to cache.")
    total_tokens: int | None = Field(description="Total tokens as reported or summed.")


class Attribution(Record):
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


class CallRecord(Record):
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
        exclude_if=absent,
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

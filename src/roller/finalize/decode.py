"""Decoding one tape exchange into the wire facts of a call.

Pure: a `TapeExchange` in, a `DecodedCall` out. Rules kept:
- the kind and protocol are the endpoint table's (`roller.wire.endpoints`), from the
  endpoint actually hit, never from the body;
- the context is the exact request body (hashed as bytes, parsed as JSON); a body that
  is not JSON is kept on the tape and reported as a capture error;
- the output is the response reassembled by the protocol's codec, read by
  `roller.wire.response.read_response` (compressed bodies are decoded first; the proxy
  never lets an encoding it cannot decode through);
- the execution and response-capture statuses are the rulebook's
  (`roller.capture.statuses`, the same functions the gateway's call rows use), from how
  the exchange ended at the proxy and whether the response reached its terminal event.

`DecodedCall.facts` is the part of a call the later stages (attribute, relate, status)
read (`roller.finalize.call_facts`): no body, no context, so a capture of any length
keeps every call's facts in memory while the bodies stay on the tape
(`roller.finalize.attempt`, `roller.finalize.kept_facts`).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from roller.capture.context import ParsedContext, parse_context
from roller.capture.models import (
    CallKind,
    ExecutionStatus,
    IdentityStatus,
    ResponseCaptureStatus,
)
from roller.capture.statuses import (
    IN_FLIGHT,
    ExchangeFacts,
    StatusInputs,
    execution_status,
    response_capture_status,
)
from roller.capture.tape import RequestMeta, TapeExchange
from roller.capture.unicode_text import held, held_exchange
from roller.finalize.call_facts import CallFacts, SharedFacts
from roller.harnesses import identify
from roller.identity import WireIdentity
from roller.wire import codec_for, endpoint_for
from roller.wire.endpoints import Endpoint
from roller.wire.response import ResponseReading, read_response
from roller.wire.types import Codec, ProtocolName, Reassembly, ToolCall, ToolResult, Usage


@dataclass(frozen=True)
class DecodedCall:
    sequence: int
    exchange: TapeExchange
    kind: CallKind
    protocol: ProtocolName | None
    json_mode: bool
    context: Any
    context_json: bytes | None  # the record's JSON of `context` (None without one)
    context_ok: bool
    context_sha256: str
    streamed: bool
    request_stream: bool
    body: bytes
    content_encoding: str | None
    reassembly: Reassembly | None
    model: str | None
    response_model: str | None
    response_id: str | None
    finish_reason: str | None
    usage: Usage | None
    emitted: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    tool_call_without_identity: bool
    execution_status: ExecutionStatus
    response_capture_status: ResponseCaptureStatus
    identity: WireIdentity
    errors: tuple[tuple[str, str], ...]

    @property
    def texts(self) -> tuple[str, ...]:
        """The request's text fragments (relate looks for a delivered notification in
        them): derived when asked, most calls never are."""
        return context_texts(self.protocol, self.context)

    @property
    def request(self) -> RequestContext:
        return RequestContext(self.protocol, self.context)

    @property
    def outcome(self) -> str:
        return IN_FLIGHT if self.exchange.end is None else str(self.exchange.end.outcome)

    # The `CallFacts` fields a decoded call holds in another shape, so the stages read
    # either (tests hand them decoded calls).
    @property
    def request_time_ns(self) -> int:
        return self.exchange.request_time_ns

    @property
    def result_ids(self) -> tuple[str, ...]:
        # interned: a conversation's later calls carry the same ids again and again
        return tuple(dict.fromkeys(sys.intern(r.id) for r in self.results if r.id is not None))

    @property
    def output_complete(self) -> bool:
        return bool(self.reassembly and self.reassembly.complete)

    @property
    def shared(self) -> SharedFacts:
        """The facts of this call that many calls share (`CallFacts.shared`)."""
        return SharedFacts(
            kind=self.kind,
            model=self.model,
            response_model=self.response_model,
            identity=self.identity,
            context_ok=self.context_ok,
            output_complete=self.output_complete,
            tool_call_without_identity=self.tool_call_without_identity,
            execution_status=self.execution_status,
            response_capture_status=self.response_capture_status,
            errors=self.errors,
        )

    @property
    def facts(self) -> CallFacts:
        return CallFacts(
            sequence=self.sequence,
            request_time_ns=self.request_time_ns,
            response_id=self.response_id,
            emitted=tuple(replace(t, arguments=None) for t in self.emitted),
            result_ids=self.result_ids,
            shared=self.shared,
        )

    def status_inputs(self, identity_status: IdentityStatus, error_count: int) -> StatusInputs:
        """The status rules' inputs (`CallFacts.status_inputs`)."""
        return self.shared.status_inputs(identity_status, error_count)


def exchange_facts(ex: TapeExchange, reading: ResponseReading) -> ExchangeFacts:
    """What the status rules need of a tape exchange, given its response reading."""
    end = ex.end
    return ExchangeFacts.of(
        outcome=None if end is None else str(end.outcome),
        status=None if ex.response is None else ex.response.status,
        streamed=reading.streamed,
        client_bytes=None if end is None else end.client_bytes,
        response_bytes=None if end is None else end.response_bytes,
        body_bytes=len(ex.body),
        terminal=reading.terminal,
    )


def _endpoint(meta: RequestMeta) -> Endpoint:
    return endpoint_for(meta.method, meta.path, meta.query)


def context_texts(protocol: ProtocolName | None, context: Any) -> tuple[str, ...]:
    return tuple(codec_for(protocol).context_texts(context)) if protocol is not None else ()


class RequestContext(NamedTuple):
    """A call's request as the stages after decode may ask for it again: its protocol and
    parsed context (None when it was not JSON). `CallFacts` keeps neither."""

    protocol: ProtocolName | None
    context: Any

    @property
    def texts(self) -> tuple[str, ...]:
        return context_texts(self.protocol, self.context)


def request_context(ex: TapeExchange) -> RequestContext:
    """An exchange's request decoded again from the tape, as `DecodedCall.request` gives it."""
    return RequestContext(
        _endpoint(ex.request).output_protocol, parse_context(ex.request_body).value
    )


NOT_UNICODE = (
    "text that is not Unicode (bytes that are not UTF-8, or a lone surrogate escape) "
    "is shown with U+FFFD in the record; the tape in raw/ keeps the exact bytes (kept "
    "unless --capture-debug off)"
)


def _held_reassembly(r: Reassembly) -> tuple[Reassembly, tuple[str, ...]]:
    """The reassembly with its text held (`roller.capture.unicode_text`)."""
    parts = (r.output, r.error, r.incomplete_reason, r.problems, r.unmerged)
    kept = held(parts)
    if kept is parts:
        return r, ()
    output, error, reason, problems, unmerged = kept
    held_r = replace(
        r, output=output, error=error, incomplete_reason=reason, problems=problems,
        unmerged=unmerged,
    )  # fmt: skip
    return held_r, ("response body",)


ToolResults = Callable[[Codec, Any], tuple[ToolResult, ...]]


def _tool_results(codec: Codec, context: Any) -> tuple[ToolResult, ...]:
    return tuple(codec.context_tool_results(context))


def decode_exchange(
    sequence: int,
    ex: TapeExchange,
    harness: str,
    parse: Callable[[bytes], ParsedContext] = parse_context,
    tool_results: ToolResults = _tool_results,
) -> DecodedCall:
    """The call of one exchange; `parse` reads its request body as `parse_context` does
    (finalize passes a `ContextReader`'s, which reads what a resent transcript adds), and
    `tool_results` its context's tool results as the codec does (finalize passes a
    `ContextResults`'s, which reads only the messages a resent transcript adds)."""
    errors: list[tuple[str, str]] = []
    ex, replaced = held_exchange(ex)  # the tape keeps the exact bytes
    meta = ex.request
    headers = meta.headers

    endpoint = _endpoint(meta)
    kind: CallKind = endpoint.record_kind
    protocol = endpoint.output_protocol
    body_bytes = ex.request_body
    parsed = parse(body_bytes)
    context: Any = parsed.value
    context_ok = parsed.ok
    if parsed.error is not None:
        errors.append(("context_not_json", parsed.error))

    identity = identify(harness, headers, context, meta.roller)

    resp = ex.response
    status = None if resp is None else resp.status
    codec = codec_for(protocol) if protocol is not None else None
    reading = read_response(codec, status, () if resp is None else resp.headers, ex.body)
    if reading.decode_error:
        errors.append(("response_not_decodable", reading.decode_error))
    reassembly = reading.reassembly
    if reassembly is not None:
        reassembly, in_response = _held_reassembly(reassembly)
        replaced += in_response
    if replaced:
        where = ", ".join(replaced)
        errors.append(("text_not_unicode", f"{where}: {NOT_UNICODE}"))
    output = reassembly.output if reassembly else None
    facts = exchange_facts(ex, reading)

    return DecodedCall(
        sequence=sequence,
        exchange=ex,
        kind=kind,
        protocol=protocol,
        json_mode=codec.json_mode(context) if codec else False,
        context=context,
        context_json=parsed.record_json(),
        context_ok=context_ok,
        context_sha256=hashlib.sha256(body_bytes).hexdigest(),
        streamed=reading.streamed,
        request_stream=codec.is_streaming_request(context, endpoint) if codec else False,
        body=reading.body,
        content_encoding=reading.content_encoding,
        reassembly=reassembly,
        model=codec.request_model(context, endpoint) if codec else None,
        response_model=codec.response_model(output) if codec else None,
        response_id=codec.response_id(output) if codec else None,
        finish_reason=codec.finish_reason(output) if codec else None,
        usage=codec.usage(output) if codec else None,
        emitted=tuple(codec.output_tool_calls(output)) if codec else (),
        results=tool_results(codec, context) if codec else (),
        tool_call_without_identity=codec.tool_call_marker_without_identity(output)
        if codec
        else False,
        execution_status=execution_status(facts),
        response_capture_status=response_capture_status(facts),
        identity=identity,
        errors=tuple(errors),
    )

"""Decoding one tape exchange into the wire facts of a call.

Pure: a `TapeExchange` in, a `DecodedCall` out. Rules kept:
- the kind and protocol are the endpoint table's (`roller.wire.endpoints`), from the
  endpoint actually hit, never from the body;
- the context is the exact request body (hashed as bytes, parsed as JSON); a body that
  is not JSON is kept on the tape and reported as a capture error;
- the output is the response reassembled by the protocol's codec; compressed bodies are
  decoded first (gzip/deflate; the proxy never lets an encoding it cannot decode through);
- statuses come from how the exchange ended at the proxy and what the body says:
  * execution `interrupted`: the client went away before the whole response reached
    it, or the tape stopped mid-exchange (a client that hangs up after every byte was
    relayed and the stream reached its terminal event completed the call);
  * execution `failed`: the upstream was unreachable, answered non-2xx, sent an error
    event, died mid-body, or ended a stream before its terminal event;
  * response capture `missing`: no response head arrived; `partial`: the exchange did
    not end normally at the proxy (but for that client); else `complete`.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from roller.capture.models import CallKind, ExecutionStatus, ResponseCaptureStatus
from roller.capture.tape import TapeExchange
from roller.harnesses import identify
from roller.identity import WireIdentity
from roller.wire import codec_for, endpoint_for
from roller.wire.types import ProtocolName, Reassembly, ToolCall, ToolResult, Usage

_FAILED_OUTCOMES = frozenset(
    {
        "upstream_connect_error",
        "upstream_disconnected",
        "upstream_timeout",
        "no_upstream",
        "rejected",
        "proxy_error",
    }
)


@dataclass(frozen=True)
class DecodedCall:
    sequence: int
    exchange: TapeExchange
    kind: CallKind
    protocol: ProtocolName | None
    json_mode: bool
    context: Any
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
    texts: tuple[str, ...]
    tool_call_without_identity: bool
    execution_status: ExecutionStatus
    response_capture_status: ResponseCaptureStatus
    identity: WireIdentity
    errors: tuple[tuple[str, str], ...]

    @property
    def outcome(self) -> str:
        return "in_flight" if self.exchange.end is None else str(self.exchange.end.get("outcome"))


def header(headers: list[list[str]] | list[tuple[str, str]], name: str) -> str | None:
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def _decode_body(raw: bytes, encoding: str | None) -> tuple[bytes, str | None]:
    """Undo content-encoding; returns (bytes, error message or None)."""
    if not encoding or encoding.lower() == "identity" or not raw:
        return raw, None
    enc = encoding.lower().strip()
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw), None
        if enc == "deflate":
            try:
                return zlib.decompress(raw), None
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS), None
    except zlib.error as exc:
        return raw, f"cannot decode {enc} body: {exc}"
    return raw, f"content-encoding {enc} is not decodable"


def decode_exchange(sequence: int, ex: TapeExchange, harness: str) -> DecodedCall:
    meta = ex.request
    method = str(meta.get("method", ""))
    path = str(meta.get("path", ""))
    headers = meta.get("headers") or []
    errors: list[tuple[str, str]] = []

    query = [(str(k), str(v)) for k, v in meta.get("query") or []]
    endpoint = endpoint_for(method, path, query)
    kind: CallKind = endpoint.record_kind
    protocol = endpoint.output_protocol
    body_bytes = ex.request_body
    context: Any = None
    context_ok = True
    if body_bytes:
        try:
            context = json.loads(body_bytes)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            context_ok = False
            errors.append(("context_not_json", f"request body is not JSON: {exc}"))

    roller_evidence = meta.get("roller") or {}
    identity = identify(harness, headers, context, roller_evidence)

    resp = ex.response
    resp_headers = (resp or {}).get("headers") or []
    status = (resp or {}).get("status")
    content_type = (header(resp_headers, "content-type") or "").lower()
    streamed = "text/event-stream" in content_type
    encoding = header(resp_headers, "content-encoding")
    body, decode_error = _decode_body(ex.body, encoding)
    if decode_error:
        errors.append(("response_not_decodable", decode_error))

    codec = codec_for(protocol) if protocol is not None else None
    reassembly: Reassembly | None = None
    if codec is not None and resp is not None and decode_error is None:
        reassembly = codec.reassemble(body, streamed=streamed, status=int(status or 0))
    output = reassembly.output if reassembly else None

    end = ex.end
    outcome = "in_flight" if end is None else str(end.get("outcome"))
    # A client that hangs up once it holds the whole response did not interrupt the call:
    # every byte the upstream sent was relayed, and the stream reached the protocol's
    # terminal event (Codex drops a finished Responses stream without reading the
    # chunked terminator, so the proxy sees the client leave a moment before the end).
    finished_then_left = (
        outcome == "client_disconnected"
        and end is not None
        and status is not None
        and int(status) < 400
        and streamed
        and reassembly is not None
        and reassembly.complete
        and reassembly.error is None
        and end.get("client_bytes") == end.get("response_bytes") == len(ex.body)
    )
    response_capture: ResponseCaptureStatus
    if resp is None:
        response_capture = "missing"
    elif outcome == "ok" or finished_then_left:
        response_capture = "complete"
    else:
        response_capture = "partial"

    execution: ExecutionStatus
    if outcome == "in_flight" or (outcome == "client_disconnected" and not finished_then_left):
        execution = "interrupted"
    elif (
        outcome in _FAILED_OUTCOMES
        or status is None
        or int(status) >= 400
        or (reassembly is not None and (reassembly.error is not None or not reassembly.complete))
    ):
        execution = "failed"
    else:
        execution = "completed"

    return DecodedCall(
        sequence=sequence,
        exchange=ex,
        kind=kind,
        protocol=protocol,
        json_mode=codec.json_mode(context) if codec else False,
        context=context,
        context_ok=context_ok,
        context_sha256=hashlib.sha256(body_bytes).hexdigest(),
        streamed=streamed,
        request_stream=codec.is_streaming_request(context, endpoint) if codec else False,
        body=body,
        content_encoding=encoding,
        reassembly=reassembly,
        model=codec.request_model(context, endpoint) if codec else None,
        response_model=codec.response_model(output) if codec else None,
        response_id=codec.response_id(output) if codec else None,
        finish_reason=codec.finish_reason(output) if codec else None,
        usage=codec.usage(output) if codec else None,
        emitted=tuple(codec.output_tool_calls(output)) if codec else (),
        results=tuple(codec.context_tool_results(context)) if codec else (),
        texts=tuple(codec.context_texts(context)) if codec else (),
        tool_call_without_identity=codec.tool_call_marker_without_identity(output)
        if codec
        else False,
        execution_status=execution,
        response_capture_status=response_capture,
        identity=identity,
        errors=tuple(errors),
    )

"""A call's shell: its record as far as decode alone knows it, and its JSON.

`call_shell(call, call_id, tool_ids)` is the `CallRecord` with every field the later
stages decide (`assemble.decide`) at a neutral value (`UNDECIDED`, `participant_id`
null, `identity_status` "unattributed", …). Finalize's first pass sets each call's
shell aside as JSON (`roller.finalize.spill`) and the second pass writes the decided
values into it (`roller.finalize.decided`).

`shell_json(call, call_id, tool_ids)` is `serialize(call_shell(…, with_context=False))`
built without the models: the same members in the record's field order, written by
orjson, which writes every value a record holds as pydantic does (strings, floats,
integers, null for a non-finite float); what orjson cannot write (an integer past 64
bits, a value that is not JSON) takes the record path, which says what it says of it.
tests/finalize/test_shell.py holds the two paths to the same bytes on every fixture.
Timestamps are the tape's, rendered once (`rfc3339`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from roller.capture.files import sha256_hex
from roller.capture.models import (
    Attribution,
    CallRecord,
    RequestInfo,
    ResponseInfo,
    ToolRefs,
    UsageInfo,
)
from roller.capture.writer import serialize
from roller.finalize.decode import DecodedCall
from roller.finalize.tool_ids import ToolIds
from roller.wire.types import Usage


def rfc3339(ns: int | None) -> str | None:
    if ns is None:
        return None
    dt = datetime.fromtimestamp(ns / 1e9, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


# What a call's shell holds until `decide` fills in the stages' decisions.
UNDECIDED = Attribution(
    basis="none", key=None, wire_participant_key=None, cross_check="absent", note=None
)


def call_shell(
    call: DecodedCall, call_id: str, tool_ids: ToolIds, *, with_context: bool = True
) -> CallRecord:
    """Call `call_id`'s record as far as decode alone knows it: everything but the fields
    `decide` sets (which hold neutral values here). Finalize's first pass can build and
    set it aside before any call is attributed (`with_context=False`: `context: null`,
    its JSON spliced in later)."""
    ex = call.exchange
    return CallRecord(
        schema_="roller.call/v1",
        call_id=call_id,
        sequence=call.sequence,
        exchange_id=ex.exchange_id,
        participant_id=None,
        kind=call.kind,
        protocol=call.protocol,
        json_mode=call.json_mode,
        request=_request_info(call),
        context=call.context if with_context else None,
        context_sha256=call.context_sha256,
        context_bytes=len(ex.request_body),
        output=call.reassembly.output if call.reassembly else None,
        output_complete=bool(call.reassembly and call.reassembly.complete),
        output_incomplete_reason=call.reassembly.incomplete_reason if call.reassembly else None,
        output_problems=list(call.reassembly.problems) if call.reassembly else [],
        output_unmerged=list(call.reassembly.unmerged) if call.reassembly else [],
        provider_error=call.reassembly.error if call.reassembly else None,
        response=_response_info(call),
        model=call.model,
        response_model=call.response_model,
        response_id=call.response_id,
        finish_reason=call.finish_reason,
        usage=_usage_info(call.usage),
        stream=call.request_stream,
        native_identity=_native_identity(call),
        attribution=UNDECIDED,
        tool_refs=_tool_refs(call, tool_ids),
        execution_status=call.execution_status,
        response_capture_status=call.response_capture_status,
        identity_status="unattributed",
        capture_status="partial",
        export_status="blocked",
        export_blocked_by=[],
        errors=[],
    )


def _native_identity(call: DecodedCall) -> dict[str, str]:
    """The wire's identity evidence; `run_id` only where the wire carries one."""
    out = {k: str(v) for k, v in call.identity.evidence.items()}
    if call.identity.run_id is not None:
        out["run_id"] = call.identity.run_id
    return out


def _request_info(call: DecodedCall) -> RequestInfo:
    ex = call.exchange
    meta = ex.request
    return RequestInfo(
        method=meta.method,
        path=meta.path,
        query=list(meta.query),
        headers=list(meta.headers),
        redacted=[*meta.redacted.headers, *meta.redacted.query],
        received_at=rfc3339(ex.request_time_ns) or "",
    )


def _response_info(call: DecodedCall) -> ResponseInfo:
    """The response as recorded; `raw_path` is decided with retention (`decide`)."""
    ex = call.exchange
    resp = ex.response
    first_byte = ex.chunks[0][0] if ex.chunks else None
    has_response = resp is not None
    return ResponseInfo(
        status=None if resp is None else resp.status,
        headers=[] if resp is None else list(resp.headers),
        streamed=call.streamed,
        outcome=call.outcome,
        raw_path=None,
        raw_sha256=sha256_hex(ex.body) if has_response else None,
        bytes=len(ex.body),
        content_encoding=call.content_encoding,
        first_byte_at=rfc3339(first_byte),
        ended_at=rfc3339(ex.end_time_ns),
    )


def _usage_info(usage: Usage | None) -> UsageInfo | None:
    if usage is None:
        return None
    return UsageInfo(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        total_tokens=usage.total_tokens,
    )


def _tool_refs(call: DecodedCall, tool_ids: ToolIds) -> ToolRefs:
    """The call's tool references, validated in one step from plain values: a context
    carries every earlier result, so there are as many as the transcript has results,
    and a model built per result cost twice the validation of the lot."""
    return ToolRefs.model_validate(_tool_refs_members(call, tool_ids))


def _tool_refs_members(call: DecodedCall, tool_ids: ToolIds) -> dict[str, Any]:
    return {
        "emitted": [
            {
                "id": t.id,
                "name": t.name,
                "item_id": t.item_id,
                "namespace": t.namespace,
                # the harness-assigned id stands in when the output carries none
                "ref": t.ref if t.ref is not None else tid,
            }
            for t, tid in zip(call.emitted, tool_ids, strict=True)
        ],
        "results": [
            {
                "id": r.id,
                "name": r.name,
                "item_id": r.item_id,
                "message_index": r.message_index,
                "is_error": r.is_error,
            }
            for r in call.results
        ],
    }


_UNDECIDED_JSON: dict[str, Any] = orjson.loads(serialize(UNDECIDED))


def shell_json(call: DecodedCall, call_id: str, tool_ids: ToolIds) -> bytes:
    """`serialize(call_shell(call, call_id, tool_ids, with_context=False))`, UTF-8
    (module docstring): the members in `CallRecord`'s field order, nested ones too."""
    try:
        return orjson.dumps(_shell_members(call, call_id, tool_ids))
    except (orjson.JSONEncodeError, TypeError):
        return serialize(call_shell(call, call_id, tool_ids, with_context=False)).encode()


def _shell_members(call: DecodedCall, call_id: str, tool_ids: ToolIds) -> dict[str, Any]:
    ex, r, usage = call.exchange, call.reassembly, call.usage
    meta, resp = ex.request, ex.response
    return {
        "schema": "roller.call/v1",
        "call_id": call_id,
        "sequence": call.sequence,
        "exchange_id": ex.exchange_id,
        "participant_id": None,
        "kind": call.kind,
        "protocol": call.protocol,
        "json_mode": call.json_mode,
        "request": {
            "method": meta.method,
            "path": meta.path,
            "query": meta.query,
            "headers": meta.headers,
            "redacted": [*meta.redacted.headers, *meta.redacted.query],
            "received_at": rfc3339(ex.request_time_ns) or "",
        },
        "context": None,
        "context_sha256": call.context_sha256,
        "context_bytes": len(ex.request_body),
        "output": r.output if r else None,
        "output_complete": bool(r and r.complete),
        "output_incomplete_reason": r.incomplete_reason if r else None,
        "output_problems": r.problems if r else (),
        "output_unmerged": r.unmerged if r else (),
        "provider_error": r.error if r else None,
        "response": {
            "status": None if resp is None else resp.status,
            "headers": () if resp is None else resp.headers,
            "streamed": call.streamed,
            "outcome": call.outcome,
            "raw_path": None,
            "raw_sha256": sha256_hex(ex.body) if resp is not None else None,
            "bytes": len(ex.body),
            "content_encoding": call.content_encoding,
            "first_byte_at": rfc3339(ex.chunks[0][0] if ex.chunks else None),
            "ended_at": rfc3339(ex.end_time_ns),
        },
        "model": call.model,
        "response_model": call.response_model,
        "response_id": call.response_id,
        "finish_reason": call.finish_reason,
        "usage": None if usage is None else {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "total_tokens": usage.total_tokens,
        },
        "stream": call.request_stream,
        "native_identity": _native_identity(call),
        "attribution": _UNDECIDED_JSON,
        "tool_refs": _tool_refs_members(call, tool_ids),
        "execution_status": call.execution_status,
        "response_capture_status": call.response_capture_status,
        "identity_status": "unattributed",
        "capture_status": "partial",
        "export_status": "blocked",
        "export_blocked_by": (),
        "errors": (),
    }  # fmt: skip

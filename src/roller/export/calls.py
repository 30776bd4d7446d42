"""Per-call export: exportable calls as training records (one JSON object per line).

Only calls whose `export_status` is `exportable` leave (unless the caller asks for
blocked ones too, which are then marked). A record holds the request exactly as sent
(`context`), the reassembled output, and who made it; it is per-call protocol data, not
a main trajectory (subagent calls are exported as their own records, never merged into
the root's conversation).

A record is one line of compact JSON (`write_jsonl`) written by pydantic's serializer,
the one that wrote the context into calls.jsonl: for every value a record holds (NaN and
integers past 64 bits included) it reads back as the record, and it is the bytes of
`json.dumps(record, ensure_ascii=False, separators=(",", ":"))` except for how a float
with an exponent is spelled (`2.5e-8`, Python `2.5e-08`), several times faster than that
on contexts of harness size (tens of KiB each). `roller export calls` writes the same
lines without parsing the request at all (`capture_lines`): calls.jsonl holds each
context as that serializer wrote it, and those bytes are put where the record's
request goes (10k calls of the benchmark's capture: 8.0 -> 6.0 s).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import pydantic_core

from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture, iter_context_json
from roller.export.omissions import Omissions
from roller.wire import codec_named

EXPORT_SCHEMA = "roller.export.call/v1"


def build_record(
    *,
    call_id: str,
    source: dict[str, Any],
    participant: dict[str, Any] | None,
    protocol: str | None,
    model: str | None,
    response_model: str | None,
    request: Any,
    response: Any,
    usage: dict[str, Any] | None,
    tool_calls: list[dict[str, Any]],
    export_status: str,
    export_blocked_by: list[str],
) -> dict[str, Any]:
    """The one shape of an exported call, whichever store it comes from (capture, gateway)."""
    return {
        "schema": EXPORT_SCHEMA,
        "call_id": call_id,
        "source": source,
        "protocol": protocol,
        "model": model,
        "response_model": response_model,
        "participant": participant,
        "request": request,
        "response": response,
        "usage": usage,
        "tool_calls": tool_calls,
        "export_status": export_status,
        "export_blocked_by": export_blocked_by,
    }


def participant_json(p: ParticipantRecord | None) -> dict[str, Any] | None:
    """Who made a call, as every per-call export names it."""
    if p is None:
        return None
    return {
        "participant_id": p.participant_id,
        "role": p.role,
        "parent_participant_id": p.parent_participant_id,
        "depth": p.depth,
        "name": p.name,
    }


def prompt_tokens(call: CallRecord) -> int | None:
    """All the call's prompt tokens, cached included (its protocol says whether its input
    count already holds them); None without usage."""
    usage = call.usage
    codec = codec_named(call.protocol)
    if usage is None or codec is None:
        return usage.input_tokens if usage else None
    return codec.chat.prompt_tokens(
        usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    )


def export_record(
    call: CallRecord,
    participant: ParticipantRecord | None,
    source: dict[str, Any],
) -> dict[str, Any]:
    """One exported call of a capture."""
    return build_record(
        call_id=call.call_id,
        source=source,
        participant=participant_json(participant),
        protocol=call.protocol,
        model=call.model,
        response_model=call.response_model,
        request=call.context,
        response=call.output,
        usage=call.usage.model_dump() if call.usage else None,
        tool_calls=[t.model_dump() for t in call.tool_refs.emitted],
        export_status=call.export_status,
        export_blocked_by=list(call.export_blocked_by),
    )


def capture_records(
    capture: Capture, include_blocked: bool = False, omissions: Omissions | None = None
) -> Iterator[dict[str, Any]]:
    """The exported records of a capture's calls, in calls.jsonl's order; a call left out
    is counted in `omissions` by its block reasons (one pass over calls.jsonl)."""
    participants = {p.participant_id: p for p in capture.manifest.participants}
    source = _source(capture)
    for call in capture.calls:
        if _wanted(call, include_blocked, omissions):
            owner = participants.get(call.participant_id) if call.participant_id else None
            yield export_record(call, owner, source)


def _wanted(call: CallRecord, include_blocked: bool, omissions: Omissions | None) -> bool:
    """Whether the call is exported; one left out is counted by its block reasons."""
    if call.export_status == "exportable" or include_blocked:
        return True
    if omissions is not None:
        omissions.leave_out("blocked:" + ",".join(call.export_blocked_by))
    return False


def _source(capture: Capture) -> dict[str, Any]:
    return {
        "capture": str(capture.paths.root),
        "sample_id": capture.manifest.sample_id,
        "attempt": capture.manifest.attempt,
        "harness": capture.manifest.harness.name,
        "harness_version": capture.manifest.harness.version,
    }


def capture_lines(
    capture: Capture, include_blocked: bool = False, omissions: Omissions | None = None
) -> Iterator[bytes]:
    """`capture_records`, each written as `write_jsonl` writes it, with the request's
    JSON taken as the capture holds it instead of parsed and written again (`reader.
    iter_context_json`: the bytes the record's serializer writes for the value, which
    is what `write_jsonl` writes for it): tens of KiB a call neither built into Python
    objects nor serialized. The same lines, byte for byte (tests/export/test_calls.py)."""
    participants = {p.participant_id: p for p in capture.manifest.participants}
    source = _source(capture)
    for call, context in iter_context_json(capture.paths):
        if _wanted(call, include_blocked, omissions):
            owner = participants.get(call.participant_id) if call.participant_id else None
            record = export_record(call, owner, source)
            record["request"] = None  # (the context left unread): its JSON goes in its place
            yield with_request(pydantic_core.to_json(record), context) + b"\n"


_REQUEST = b',"request":null,"response":'


def with_request(line: bytes, request: bytes | None) -> bytes:
    """An exported record written with `request: null`, with `request` (its JSON) in
    place. The first `,"request":null,"response":` is the record's own member: what
    comes before it is `build_record`'s fixed keys and the source's and participant's
    (none named `request`), and a quote inside a string is escaped."""
    if request is None:
        return line
    at = line.index(_REQUEST) + len(b',"request":')
    return line[:at] + request + line[at + len(b"null") :]


def write_lines(lines: Iterable[bytes], out: IO[bytes]) -> int:
    """Lines as they are; how many were written."""
    n = 0
    for line in lines:
        out.write(line)
        n += 1
    return n


def write_jsonl(records: Iterable[dict[str, Any]], out: IO[bytes]) -> int:
    """Each record as one line of compact JSON; how many were written."""
    n = 0
    for record in records:
        out.write(pydantic_core.to_json(record) + b"\n")
        n += 1
    return n

"""A call's record JSON completed with what the stages decided, without re-reading the record.

Finalize's first pass serializes each call's shell (`shell.call_shell`: every field
decode knows, the decided ones at their neutral values) and sets the JSON aside; the
second pass completes it. `decided_json(parts, i, shell)` writes the decided values into
the shell's JSON where the neutral ones stand: the bytes `serialize(decide(parts, i,
CallRecord.model_validate_json(shell)))` gives (tests/finalize/test_decided.py, and every
fixture through the goldens), without validating and re-serializing the whole record —
its tool references grow with the transcript.

Why each place is found for sure: a JSON string holds a quote only escaped, so a run
like `,"raw_path":` with bare quotes is a member name; the members after `response`
(response facts, model names, usage, identity, attribution, tool references, statuses)
hold strings, numbers and flags only, so searching from the end finds the record's own
member, never one inside `output` (which comes before `response` and may hold any JSON);
`participant_id` is the fifth member, after strings only. The record's last five members
are always the shell's neutral ones (`_TAIL`). A call whose store facts change its
`native_identity` (OpenClaw's) takes the record path: None.
"""

from __future__ import annotations

import orjson

from roller.capture.models import CallRecord
from roller.capture.writer import serialize
from roller.finalize.assemble import CaptureParts, decide, store_identity
from roller.finalize.shell import UNDECIDED

_PARTICIPANT = b',"participant_id":null,'
_RAW_PATH = b',"raw_path":null,"raw_sha256":'
_ATTRIBUTION = (
    b',"attribution":' + UNDECIDED.model_dump_json(by_alias=True).encode() + b',"tool_refs":'
)
_TAIL = (
    b',"identity_status":"unattributed","capture_status":"partial",'
    b'"export_status":"blocked","export_blocked_by":[],"errors":[]}'
)


def decided_json(parts: CaptureParts, i: int, shell: bytes, has_raw_body: bool) -> bytes:
    """Call i's record JSON from its shell's; `has_raw_body`: its response has a body
    (`raw_sha256` set), so a retained raw/ gives it a `raw_path`."""
    if store_identity(parts, i, {}) or not shell.endswith(_TAIL):
        return _by_record(parts, i, shell)
    attr, status = parts.attributed.calls[i], parts.statuses[i]
    pid = parts.ids.participants[attr.participant_key] if attr.participant_key else None
    retained = parts.verdict.retained and has_raw_body  # the call's id made only then
    raw_path = f"raw/responses/{parts.ids.calls[i]}.body" if retained else None
    head = shell.index(_PARTICIPANT)
    raw = shell.rindex(_RAW_PATH)
    attribution = shell.rindex(_ATTRIBUTION)
    errors = b",".join(serialize(e).encode() for e in status.errors)
    return b"".join(
        (
            shell[:head],
            b',"participant_id":' + orjson.dumps(pid) + b",",
            shell[head + len(_PARTICIPANT) : raw],
            b',"raw_path":' + orjson.dumps(raw_path) + b',"raw_sha256":',
            shell[raw + len(_RAW_PATH) : attribution],
            b',"attribution":'
            + attr.attribution.model_dump_json(by_alias=True).encode()
            + b',"tool_refs":',
            shell[attribution + len(_ATTRIBUTION) : -len(_TAIL)],
            b',"identity_status":' + orjson.dumps(attr.status),
            b',"capture_status":' + orjson.dumps(status.capture),
            b',"export_status":' + orjson.dumps(status.export),
            b',"export_blocked_by":' + orjson.dumps(status.blocked),
            b',"errors":[' + errors + b"]}",
        )
    )


def _by_record(parts: CaptureParts, i: int, shell: bytes) -> bytes:
    return serialize(decide(parts, i, CallRecord.model_validate_json(shell))).encode()

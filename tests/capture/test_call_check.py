"""roller.capture.call_check (through `reader.checked_call`): a call line read for a check
gives the full reading's verdict.

Every recorded fixture's call lines, and those lines damaged in each way a line can be
(in the context the check does not read, and around it), are read by `checked_call`
and by `validate_json(line, CallRecord)`: both accept or both raise, with the same
message; an accepted record is the full one but for its context, which is None exactly
when the full one's is, `CONTEXT_NOT_READ` otherwise (or the full value, for a line the
fast path leaves to the full reading).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from roller.capture.call_check import CONTEXT_NOT_READ
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.reader import checked_call, validate_json
from tests.capture.test_compact_v3 import _published
from tests.finalize.test_fixture_goldens import FIXTURES


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    out: list[bytes] = []
    for harness, name in FIXTURES:
        dest = tmp_path_factory.mktemp(f"{harness}-{name}")
        out += _published(harness, name, dest, "compact/v2").calls.read_bytes().splitlines()
    return out


def _verdict(read: Callable[[bytes], CallRecord], line: bytes) -> tuple[str, object]:
    try:
        call = read(line)
    except ValidationError as exc:
        return "invalid", str(exc)
    return "valid", call


def _same_verdict(line: bytes) -> str:
    checked, full = (
        _verdict(checked_call, line),
        _verdict(lambda data: validate_json(data, CallRecord), line),
    )
    assert checked[0] == full[0], (line[:200], checked, full)
    if checked[0] == "invalid":
        assert checked[1] == full[1]
        return "invalid"
    got, want = checked[1], full[1]
    assert isinstance(got, CallRecord) and isinstance(want, CallRecord)
    assert (got.context is None) == (want.context is None)
    # Left unread, or (a line only the full reading takes, e.g. a NaN) read in full.
    assert got.context in (None, CONTEXT_NOT_READ) or type(got) is CallRecord
    assert got.model_dump(exclude={"context"}) == want.model_dump(exclude={"context"})
    return "valid"


def test_every_fixture_line_reads_as_in_full(lines: list[bytes]) -> None:
    assert len(lines) > 20
    assert {_same_verdict(line) for line in lines} == {"valid"}
    nulls = [line for line in lines if json.loads(line)["context"] is None]
    assert nulls and len(nulls) < len(lines)  # both kinds of context are among them


def _with_context(line: bytes, context: bytes) -> bytes:
    """The line with its context's JSON text replaced (the record re-serialized around
    a placeholder, so any bytes can stand there)."""
    record = json.loads(line)
    record["context"] = "\x00placeholder"
    return (
        json.dumps(record, separators=(",", ":")).encode().replace(b'"\\u0000placeholder"', context)
    )


DAMAGED_CONTEXTS = {
    "null": b"null",
    "null, spaced": b" null ",
    "an empty object": b"{}",
    "a string": b'"text"',
    "invalid UTF-8": b'{"x":"\xff\xfe"}',
    "a lone surrogate": b'{"x":"\\ud800"}',
    "a bad escape": b'{"x":"\\q"}',
    "a raw control character": b'{"x":"a\x01b"}',
    "a trailing comma": b'{"x":[1,]}',
    "a number out of range": b'{"x":' + b"9" * 5000 + b"}",
    "a long number": b'{"x":' + b"9" * 300 + b"}",
    "an exponent past a float": b"1e400",
    "NaN": b'{"x":NaN}',
    "nesting past the limit": b"[" * 300 + b"]" * 300,
    "nesting just inside it": b"[" * 200 + b"]" * 200,
    "an unterminated string": b'{"x":"abc}',
    "nothing": b"",
}


@pytest.mark.parametrize("context", DAMAGED_CONTEXTS.values(), ids=DAMAGED_CONTEXTS.keys())
def test_a_context_is_judged_as_in_full(lines: list[bytes], context: bytes) -> None:
    line = next(line for line in lines if json.loads(line)["context"] is not None)
    _same_verdict(_with_context(line, context))


def _edited(line: bytes, edit: str) -> bytes:
    record = json.loads(line)
    if edit == "unknown key":
        record["contexts"] = 1
    elif edit == "context missing":
        del record["context"]
    elif edit == "a field by its name, not its alias":
        record["schema_"] = record.pop("schema")
    elif edit == "a field of the wrong type":
        record["sequence"] = "1"
    elif edit == "a required field missing":
        del record["call_id"]
    text = json.dumps(record, separators=(",", ":")).encode()
    if edit == "context repeated, null last":
        return text[:-1] + b',"context":null}'
    if edit == "context repeated, an object last":
        return text[:-1] + b',"context":{"y":1}}'
    if edit == "trailing garbage":
        return text + b"x"
    if edit == "not an object":
        return b"[" + text + b"]"
    return text


EDITS = (
    "unknown key",
    "context missing",
    "a field by its name, not its alias",
    "a field of the wrong type",
    "a required field missing",
    "context repeated, null last",
    "context repeated, an object last",
    "trailing garbage",
    "not an object",
)


@pytest.mark.parametrize("edit", EDITS)
def test_a_record_around_its_context_is_judged_as_in_full(lines: list[bytes], edit: str) -> None:
    for line in lines[:6]:
        _same_verdict(_edited(line, edit))


def test_validate_reports_a_damaged_context_as_before(tmp_path: Path) -> None:
    # Through `roller validate`'s own scan: a context that does not parse is record_invalid.
    harness, name = FIXTURES[0]
    paths = _published(harness, name, tmp_path, "compact/v2")
    assert validate_attempt(paths).ok
    calls = paths.calls.read_bytes().splitlines()
    at = next(i for i, line in enumerate(calls) if json.loads(line)["context"] is not None)
    calls[at] = _with_context(calls[at], b'{"x":"\\q"}')
    paths.calls.write_bytes(b"\n".join(calls) + b"\n")
    codes = {p.code for p in validate_attempt(AttemptPaths(paths.root)).problems}
    assert "record_invalid" in codes


def test_the_fast_reading_builds_no_context(lines: list[bytes]) -> None:
    # What the fast path is for: the context key matches no field of the model it
    # validates with, so pydantic skips its value instead of building it.
    from roller.capture.call_check import _CallChecked

    line = next(line for line in lines if json.loads(line)["context"] is not None)
    assert _CallChecked.model_validate_json(line).context is None

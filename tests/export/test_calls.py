"""`roller export calls` (roller format): one compact JSON line per exportable call.

A line reads back as its record for every value a record can hold; its bytes are
Python's compact JSON except for a float's exponent (`2.5e-8`, Python `2.5e-08`). The
records of a capture are read in one pass, which also counts what it leaves out."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pydantic_core
import pytest

from roller.capture.call_check import unread_context_json
from roller.capture.context import context_json, with_context
from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.export.calls import (
    build_record,
    capture_lines,
    capture_records,
    with_request,
    write_jsonl,
)
from roller.export.omissions import Omissions
from tests.export.real_captures import RealCaptures
from tests.support.captures import roller

AWKWARD_VALUES: list[Any] = [
    float("nan"),
    float("inf"),
    -0.0,
    1e16,
    2.5e-8,
    10**30,
    -(10**25),
    'é \u2028 \u2029 \x7f \x00 \x1f " \\ / \t',
    "\U0001f600",
    {"": [], "nested": {"a": [1, None, True, False]}},
]


def _python_line(record: Any) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _same_value(line: bytes, record: Any) -> bool:
    # by Python's writing of both, so that NaN (never equal to itself) compares
    return json.dumps(json.loads(line)) == json.dumps(record)


@pytest.mark.parametrize("value", AWKWARD_VALUES, ids=repr)
def test_a_line_reads_back_as_its_record(value: Any) -> None:
    record = {"schema": "x", "request": {"v": value, "list": [value]}}
    out = io.BytesIO()
    assert write_jsonl([record, record], out) == 2
    lines = out.getvalue().splitlines(keepends=True)
    assert len(lines) == 2 and lines[0] == lines[1]
    assert _same_value(lines[0], record)
    if not isinstance(value, float) or "e-" not in repr(value):
        assert lines[0] == _python_line(record)


def test_real_captures_export_as_python_writes_them(real_captures: RealCaptures) -> None:
    for capture in real_captures.values():
        records = list(capture_records(capture, include_blocked=True))
        out = io.BytesIO()
        write_jsonl(records, out)
        lines = out.getvalue().splitlines(keepends=True)
        assert len(lines) == len(records)
        for line, record in zip(lines, records, strict=True):
            assert _same_value(line, record)
            assert line == _python_line(record) or b"e-" in line


def test_one_pass_counts_what_it_leaves_out(real_captures: RealCaptures) -> None:
    seen = 0
    for capture in real_captures.values():
        omissions = Omissions("call")
        chosen = list(capture_records(capture, False, omissions))
        blocked = [c for c in capture.calls if c.export_status != "exportable"]
        assert len(chosen) + sum(omissions.left_out.values()) == len(capture.calls)
        assert omissions.left_out == {
            reason: sum(1 for c in blocked if "blocked:" + ",".join(c.export_blocked_by) == reason)
            for reason in omissions.left_out
        }
        assert sum(omissions.left_out.values()) == len(blocked)
        seen += len(blocked)
    assert seen, "no real capture has a blocked call: the count is untested"


def test_cli_writes_the_records_to_a_file_and_to_stdout(
    real_captures: RealCaptures, tmp_path: Path
) -> None:
    run = real_captures.run("gemini-cli", "killed-child")
    out = tmp_path / "calls.jsonl"
    to_file = roller("export", "calls", str(run), "--out", str(out))
    assert to_file.returncode == 0, to_file.stderr
    to_stdout = roller("export", "calls", str(run))
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert out.read_text(encoding="utf-8") == to_stdout.stdout
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines and all(json.loads(line)["export_status"] == "exportable" for line in lines)
    summary = to_file.stderr.strip().splitlines()[-1]
    assert summary.startswith(f"exported {len(lines)} call(s); left out ")


def _lines_both_ways(capture: Capture, include_blocked: bool = True) -> tuple[bytes, bytes]:
    """(`capture_lines`, `write_jsonl(capture_records)`) for one capture."""
    records = io.BytesIO()
    write_jsonl(capture_records(capture, include_blocked), records)
    return b"".join(capture_lines(capture, include_blocked)), records.getvalue()


def test_lines_with_unparsed_requests_are_the_records_lines(real_captures: RealCaptures) -> None:
    # The request's JSON taken from calls.jsonl as it is, the same bytes as the record's
    # request parsed and written again; blocked calls left out alike.
    for key, capture in real_captures.items():
        for include_blocked in (True, False):
            fast, full = _lines_both_ways(capture, include_blocked)
            assert fast == full, key
    assert any(c.context is not None for cap in real_captures.values() for c in cap.calls)


CONTEXTS: list[Any] = [
    {"messages": [{"role": "user", "content": value}], "n": [value]} for value in AWKWARD_VALUES
] + [[], {}, "text", 0, -(2**63), 2**64, 1.5e300, {"deep": [[[[{"a": [1.0, 1e-7]}]]]]}]


@pytest.mark.parametrize("context", CONTEXTS, ids=repr)
def test_a_request_of_any_value_exports_as_the_record(
    real_captures: RealCaptures, tmp_path: Path, context: Any
) -> None:
    # A call's context replaced by a value of each awkward kind (as finalize writes it,
    # `context_json`): NaN leaves the line to the full reading, wide integers and
    # exponents do not; either way the line is the record's.
    source = real_captures[("claude-code", "parallel")]
    dest = tmp_path / "attempt"
    shutil.copytree(source.paths.root, dest)
    paths = AttemptPaths(dest)
    lines = paths.calls.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["context"] = None
    blank = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    lines[0] = with_context(blank, context_json(context)) + b"\n"
    paths.calls.write_bytes(b"".join(lines))
    # NaN and infinities are the JSON msgspec refuses: only they take the full reading
    text = context_json(context)
    unparsed = unread_context_json(lines[0])
    assert (unparsed is None) == (b"NaN" in text or b"Infinity" in text)
    assert unparsed is None or unparsed[1] == text
    capture = read_attempt(paths)
    fast, full = _lines_both_ways(capture)
    assert fast == full
    first = fast.splitlines()[0]
    assert json.dumps(json.loads(first)["request"]) == json.dumps(context)


def test_the_request_goes_where_the_record_puts_it() -> None:
    # A participant named with the very text that marks the request's place (and a source
    # path too): their quotes are escaped, so the record's own member is found.
    trap = '","request":null,"response":"'
    record = build_record(
        call_id="c1",
        source={"capture": f"/x/{trap}/y"},
        participant={"participant_id": "p", "name": trap},
        protocol=None,
        model=None,
        response_model=None,
        request=None,
        response={"a": 1, "request": None, "response": 1},
        usage=None,
        tool_calls=[],
        export_status="exportable",
        export_blocked_by=[],
    )
    request = {"messages": [trap]}
    spliced = with_request(pydantic_core.to_json(record), context_json(request))
    assert spliced == pydantic_core.to_json({**record, "request": request})
    assert with_request(pydantic_core.to_json(record), None) == pydantic_core.to_json(record)


@pytest.mark.parametrize(
    "command",
    [["calls"], ["calls", "--format", "openai-messages"], ["trajectory"], ["otel"]],
    ids=" ".join,
)
def test_an_output_that_cannot_be_written_is_said_in_a_line(
    real_captures: RealCaptures, tmp_path: Path, command: list[str]
) -> None:
    # (ATIF's --out is a directory it makes)
    run = real_captures.run("claude-code", "parallel")
    out = tmp_path / "missing" / "out.jsonl"
    result = roller("export", *command, str(run), "--out", str(out))
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"roller: error: {out}: No such file or directory"
    )
    assert "Traceback" not in result.stderr
    assert not out.parent.exists()

"""`roller export calls` (roller format): one compact JSON line per exportable call.

A line reads back as its record for every value a record can hold; its bytes are
Python's compact JSON except for a float's exponent (`2.5e-8`, Python `2.5e-08`). The
records of a capture are read in one pass, which also counts what it leaves out."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from roller.export.calls import capture_records, write_jsonl
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

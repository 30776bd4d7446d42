"""Fuzz every harness's native log reader, the tape reader and the capture reader,
seeded from the real runs under tests/data/harnesses.

Each example copies one real fixture and damages one of its files the ways a crashed,
half-written or hostile log is damaged: cut short, bytes overwritten or inserted, a JSON
line's value replaced by a value of another type, the file removed. Rules asserted:
- a native reader never raises: it returns its capture (or None) with every problem a
  `NativeProblem` whose code is declared (`NATIVE_PROBLEM_CODES`);
- `read_tape` never raises: problems are strings naming where, exchanges stay typed;
- `read_attempt` either reads the capture or raises `CaptureFormatError` naming the file.
Seeded and derandomized (the same examples every run); `ROLLER_FUZZ_EXAMPLES` raises the
number of examples per reader (default 25, about a minute for all of them on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roller.capture.files import jsonl_bytes
from roller.capture.layout import AttemptPaths
from roller.capture.reader import read_attempt
from roller.capture.tape import read_tape
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta
from roller.capture.writer import serialize
from roller.errors import CaptureFormatError
from roller.harnesses import adapter_for
from roller.harnesses.base import NATIVE_PROBLEM_CODES, NativeCapture, NativeProblem
from roller.harnesses.registry import adapters
from tests.harnesses.fixture_capture import DATA, finalize_fixture, unpacked_copy

EXAMPLES = int(os.environ.get("ROLLER_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WITH_FIXTURES = sorted(a.name for a in adapters() if any((DATA / a.name).glob("*/native")))
_CACHE: list[Path] = []  # the module's scratch dir, made when first asked for (`_cache`)
# Real runs finalized into the captures the capture reader is fuzzed on.
CAPTURES = (("claude-code", "nested-background"), ("codex", "v2-fork"), ("pi", "responses-plain"))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


def _cache() -> Path:
    if not _CACHE:
        _CACHE.append(Path(tempfile.mkdtemp(prefix="roller-fuzz-")))
    return _CACHE[0]


@pytest.fixture(scope="module", autouse=True)
def _cache_removed() -> Iterator[None]:
    """What the module's tests unpacked and finalized goes with them (it was left in the
    temporary directory, ~34 MB a run)."""
    yield
    unpacked.cache_clear()
    _finalized.cache_clear()
    while _CACHE:
        shutil.rmtree(_CACHE.pop(), ignore_errors=True)


@cache
def unpacked(relative: str) -> Path:
    """A fixture directory (relative to tests/data/harnesses) unpacked once per run."""
    return unpacked_copy(DATA / relative, _cache() / relative)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _replace_a_value(data: bytes, pick: int, value: Any) -> bytes:
    """One JSON line's (or the document's) value at some key replaced by `value`."""
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    n = pick % len(lines)
    try:
        record = json.loads(lines[n])
    except ValueError:
        return data
    if isinstance(record, dict) and record:
        keys = sorted(record)
        record[keys[pick % len(keys)]] = value
    else:
        record = value
    end = b"\n" if lines[n].endswith(b"\n") else b""
    lines[n] = json.dumps(record).encode() + end
    return b"".join(lines)


@st.composite
def damage(draw: st.DrawFn, files: list[Path]) -> tuple[Path, str, Any]:
    path = draw(st.sampled_from(files))
    kind = draw(st.sampled_from(["truncate", "overwrite", "insert", "retype", "remove"]))
    if kind == "truncate":
        return path, kind, draw(st.floats(0, 1))
    if kind in ("overwrite", "insert"):
        return path, kind, (draw(st.floats(0, 1)), draw(st.binary(min_size=1, max_size=64)))
    if kind == "retype":
        return path, kind, (draw(st.integers(0, 10_000)), draw(json_values))
    return path, kind, None


def apply(path: Path, kind: str, arg: Any) -> None:
    if kind == "remove":
        path.unlink()
        return
    data = path.read_bytes()
    if kind == "truncate":
        data = data[: int(len(data) * arg)]
    elif kind == "overwrite":
        at, junk = int(len(data) * arg[0]), arg[1]
        data = data[:at] + junk + data[at + len(junk) :]
    elif kind == "insert":
        at = int(len(data) * arg[0])
        data = data[:at] + arg[1] + data[at:]
    else:
        data = _replace_a_value(data, *arg)
    path.write_bytes(data)


def _damaged_copy(source: Path, data: st.DataObject) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="roller-fuzz-") as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(source, copy)
        files = _files(copy)
        if files:
            apply(*data.draw(damage(files)))
        yield copy


def _fixtures(harness: str, part: str) -> list[str]:
    return sorted(f"{p.parent.relative_to(DATA)}" for p in DATA.glob(f"{harness}/*/{part}"))


def test_every_native_reader_is_fuzzed(tmp_path: Path) -> None:
    """Every adapter is fuzzed from its real runs, or keeps no native logs at all."""
    for adapter in adapters():
        if adapter.name not in WITH_FIXTURES:
            assert adapter.read_native(tmp_path) is None, adapter.name
    assert len(WITH_FIXTURES) >= 8


@pytest.mark.parametrize("harness", WITH_FIXTURES)
@FUZZ
@given(data=st.data())
def test_a_native_reader_reports_damage_as_problems(harness: str, data: st.DataObject) -> None:
    fixture = data.draw(st.sampled_from(_fixtures(harness, "native")))
    for native in _damaged_copy(unpacked(fixture) / "native", data):
        result = adapter_for(harness).read_native(native)
        assert result is None or isinstance(result, NativeCapture)
        for problem in () if result is None else result.problems:
            assert isinstance(problem, NativeProblem) and problem.code in NATIVE_PROBLEM_CODES


@FUZZ
@given(data=st.data())
def test_the_tape_reader_reports_damage_as_problems(data: st.DataObject) -> None:
    fixture = data.draw(st.sampled_from(_fixtures("*", "tape")))
    for tape_dir in _damaged_copy(unpacked(fixture) / "tape", data):
        result = read_tape(tape_dir)
        assert all(isinstance(p, str) for p in result.problems)
        for exchange in result.exchanges:
            assert isinstance(exchange.request, RequestMeta)
            assert exchange.response is None or isinstance(exchange.response, ResponseMeta)
            assert exchange.end is None or isinstance(exchange.end, EndMeta)
            assert isinstance(exchange.request_body, bytes)


@cache
def _finalized(harness: str, name: str) -> Path:
    """A capture (manifest, calls, relations) finalized from a real run, on disk."""
    work = _cache() / "finalized" / harness / name
    finalized = finalize_fixture(harness, name, work / "inputs")
    paths = AttemptPaths(work / "capture")
    paths.root.mkdir(parents=True)
    paths.calls.write_bytes(jsonl_bytes(serialize(c) for c in finalized.calls))
    paths.relations.write_bytes(jsonl_bytes(serialize(r) for r in finalized.relations))
    paths.manifest.write_bytes((serialize(finalized.manifest) + "\n").encode())
    read_attempt(paths)  # undamaged, it reads
    return paths.root


@FUZZ
@given(data=st.data())
def test_the_capture_reader_refuses_damage_with_a_typed_error(data: st.DataObject) -> None:
    harness, name = data.draw(st.sampled_from(CAPTURES))
    for root in _damaged_copy(_finalized(harness, name), data):
        try:
            read_attempt(AttemptPaths(root))
        except CaptureFormatError as exc:
            assert str(root) in str(exc)

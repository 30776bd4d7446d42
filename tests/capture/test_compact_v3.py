"""compact/v3: every recorded fixture finalized both ways reads, validates and exports
to exactly what its compact/v2 twin gives; damage to the blob store is detected.

Each fixture under tests/data/harnesses/ (a real run's tape and native logs) is
finalized into two attempt directories, `roller finalize --storage-layout` compact/v2
and compact/v3. Through the capture reader the two give equal call records (every
context rebuilt byte for byte and checked against `context_sha256`), equal relations,
the same manifest but for `storage_layout` and `files`; `roller validate` passes both;
the per-call export, the main trajectory and the view's tree are the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.reader import iter_calls, read_attempt
from roller.capture.writer import serialize
from roller.errors import CaptureFormatError
from roller.export.calls import capture_lines, capture_records
from roller.export.trajectory import build_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.view.tree import build_tree
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import fixture_dir, unpacked_copy


def _published(harness: str, name: str, dest: Path, layout: str) -> AttemptPaths:
    paths = AttemptPaths(dest / "attempt-0001")
    src = fixture_dir(harness, name)
    unpacked_copy(src / "tape", paths.tape)
    unpacked_copy(src / "native", paths.native)
    shutil.copyfile(src / "attempt.json", paths.attempt_inputs)
    finalize_attempt(paths, layout)  # type: ignore[arg-type]
    return paths


def _exported(paths: AttemptPaths) -> list[dict[str, object]]:
    return [
        {k: v for k, v in r.items() if k != "source"}
        for r in capture_records(read_attempt(paths), include_blocked=True)
    ]


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_v3_reads_validates_and_exports_as_its_v2_twin(
    harness: str, name: str, tmp_path: Path
) -> None:
    v2 = _published(harness, name, tmp_path / "v2", "compact/v2")
    v3 = _published(harness, name, tmp_path / "v3", "compact/v3")
    assert v3.contexts.is_file() and not v2.contexts.exists()
    assert b'"context_ref":' in v3.calls.read_bytes()
    # Each line is what the record's own serializer writes (`context_ref` spliced in).
    for line in v3.calls.read_bytes().splitlines():
        assert serialize(CallRecord.model_validate_json(line)).encode() == line
    assert list(iter_calls(v3)) == list(iter_calls(v2))
    two, three = read_attempt(v2), read_attempt(v3)
    assert three.relations == two.relations
    assert three.manifest.storage_layout == "compact/v3"
    skip = {"storage_layout", "files"}
    assert three.manifest.model_dump(exclude=skip) == two.manifest.model_dump(exclude=skip)
    assert set(three.manifest.files) == {"calls.jsonl", "relations.jsonl", "contexts.blobs"}
    assert validate_attempt(v2).ok and validate_attempt(v3).ok, validate_attempt(v3).problems
    assert _exported(v3) == _exported(v2)
    # `roller export calls`'s lines, the request's JSON unparsed: the same bytes but the
    # capture's own path in each line's source
    lines2 = b"".join(capture_lines(two, include_blocked=True))
    lines3 = b"".join(capture_lines(three, include_blocked=True))
    assert lines2.count(b"\n") == len(_exported(v2))
    assert lines3 == lines2.replace(str(v2.root).encode(), str(v3.root).encode())
    traj2, traj3 = build_trajectory(two), build_trajectory(three)
    assert traj3.model_dump(exclude={"source"}) == traj2.model_dump(exclude={"source"})
    tree2, tree3 = build_tree(two), build_tree(three)
    assert tree3.pop("attempt_dir") != tree2.pop("attempt_dir")
    assert tree3 == tree2


def test_v3_is_smaller_when_contexts_repeat(tmp_path: Path) -> None:
    v2 = _published("claude-code", "parallel", tmp_path / "v2", "compact/v2")
    v3 = _published("claude-code", "parallel", tmp_path / "v3", "compact/v3")
    stored = v3.calls.stat().st_size + v3.contexts.stat().st_size
    assert stored < v2.calls.stat().st_size


def test_a_flipped_byte_in_the_blob_store_is_detected(tmp_path: Path) -> None:
    v3 = _published("claude-code", "parallel", tmp_path, "compact/v3")
    data = bytearray(v3.contexts.read_bytes())
    # a byte inside the largest payload: past its frame header line
    at = data.index(b"\n", len(data) // 2) - 7
    data[at] ^= 0x01
    v3.contexts.write_bytes(bytes(data))
    report = validate_attempt(v3)
    codes = {(p.code, p.where) for p in report.problems}
    assert ("hash_mismatch", "contexts.blobs") in codes
    assert ("record_invalid", "calls.jsonl") in codes
    with pytest.raises(CaptureFormatError, match=r"contexts\.blobs"):
        list(iter_calls(v3))


def test_a_reference_without_its_blob_store_is_an_error(tmp_path: Path) -> None:
    v3 = _published("claude-code", "parallel", tmp_path, "compact/v3")
    v3.contexts.unlink()
    report = validate_attempt(v3)
    assert not report.ok
    assert {p.code for p in report.problems} >= {"missing_file", "record_invalid"}


def test_refinalizing_in_v2_removes_the_blob_store(tmp_path: Path) -> None:
    paths = _published("claude-code", "parallel", tmp_path, "compact/v3")
    assert paths.raw.exists()  # the fixture was collected with retention full
    finalize_attempt(paths, "compact/v2")
    assert not paths.contexts.exists()
    assert validate_attempt(paths).ok

"""Retention and tamper tests on real captures collected with `roller collect`.

Retention (`--capture-debug`): cleaning raw/ after a successful run leaves raw_path null,
evidence `retained: false`, every status unchanged, and a capture that validates.
Tampering: one changed byte in any formal file, a deleted file, a dangling relation (with
the manifest re-hashed so only the reference check can notice) — `roller validate`
catches each and exits 1.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.captures import REPO, only_attempt, roller, summarize

from roller.capture.files import describe
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths

SINGLE = REPO / "tests" / "golden" / "single" / "agent.py"


def collect_single(run_dir: Path, retention: str) -> None:
    proc = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        "mock:plain",
        "--capture-debug",
        retention,
        "--run-dir",
        str(run_dir),
        "--",
        sys.executable,
        str(SINGLE),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("retention")
    out = {}
    for retention in ("on-error", "full", "off"):
        out[retention] = base / retention
        collect_single(out[retention], retention)
    return out


def test_on_error_cleans_raw_of_a_successful_run(runs: dict[str, Path]) -> None:
    capture = only_attempt(runs["on-error"])
    assert capture.manifest.capture_status == "complete"
    assert capture.manifest.raw_retained is False
    assert not capture.paths.raw.exists()
    assert all(c.response.raw_path is None for c in capture.calls)
    assert all(c.response.raw_sha256 for c in capture.calls)
    assert validate_attempt(capture.paths).ok


def test_cleanup_never_changes_a_status(runs: dict[str, Path]) -> None:
    cleaned = summarize(only_attempt(runs["on-error"]))
    kept = summarize(only_attempt(runs["full"]))
    assert cleaned == kept
    assert summarize(only_attempt(runs["off"])) == kept


def test_full_keeps_raw_and_raw_hashes_match(runs: dict[str, Path]) -> None:
    capture = only_attempt(runs["full"])
    assert capture.manifest.raw_retained is True
    for call in capture.calls:
        assert call.response.raw_path is not None
        assert (capture.paths.root / call.response.raw_path).is_file()
    assert validate_attempt(capture.paths).ok


def test_a_cleaned_capture_cannot_be_refinalized(runs: dict[str, Path]) -> None:
    capture = only_attempt(runs["on-error"])
    proc = roller("finalize", str(capture.paths.root))
    assert proc.returncode == 2
    assert "cannot be re-finalized" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def copy(runs: dict[str, Path], tmp_path: Path) -> AttemptPaths:
    src = only_attempt(runs["full"]).paths.root
    dst = tmp_path / "attempt-0001"
    shutil.copytree(src, dst)
    return AttemptPaths(dst)


def _flip_one_byte(path: Path, marker: bytes) -> None:
    data = bytearray(path.read_bytes())
    at = data.index(marker)
    data[at] = ord("X") if data[at] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))


def _codes(attempt: AttemptPaths) -> set[str]:
    return {p.code for p in validate_attempt(attempt).problems}


@pytest.mark.parametrize("name", ["calls.jsonl", "relations.jsonl", "manifest.json"])
def test_one_changed_byte_in_a_formal_file_is_caught(copy: AttemptPaths, name: str) -> None:
    assert validate_attempt(copy).ok
    path = copy.root / name
    if name == "relations.jsonl" and not path.read_bytes():
        # The single-agent capture has no relations: tamper by adding a byte instead.
        path.write_bytes(b" ")
    elif name == "manifest.json":
        # A byte inside the recorded hash of calls.jsonl: still valid JSON.
        manifest = json.loads(path.read_text())
        digest = manifest["files"]["calls.jsonl"]["sha256"].encode()
        _flip_one_byte(path, digest)
    else:
        _flip_one_byte(path, b"mock-model")
    codes = _codes(copy)
    assert codes & {"hash_mismatch", "size_mismatch", "record_invalid"}, codes
    proc = roller("validate", str(copy.root))
    assert proc.returncode == 1, proc.stdout


def test_a_deleted_formal_file_is_caught(copy: AttemptPaths) -> None:
    copy.calls.unlink()
    assert "missing_file" in _codes(copy)
    assert roller("validate", str(copy.root)).returncode == 1


def test_a_deleted_raw_body_is_caught(copy: AttemptPaths) -> None:
    body = next((copy.raw / "responses").iterdir())
    body.unlink()
    assert "missing_file" in _codes(copy)


def test_a_raw_body_linked_from_outside_the_capture_is_caught(
    copy: AttemptPaths, tmp_path: Path
) -> None:
    # The same bytes, but a symlink out of the attempt: not the capture's file. The
    # attempt reached through a symlink of its own stays valid (its root is resolved too).
    linked = tmp_path / "linked-attempt"
    linked.symlink_to(copy.root, target_is_directory=True)
    assert validate_attempt(AttemptPaths(linked)).ok
    body = sorted((copy.raw / "responses").iterdir())[0]
    outside = tmp_path / "outside.body"
    outside.write_bytes(body.read_bytes())
    body.unlink()
    body.symlink_to(outside)
    assert "missing_file" in _codes(copy)
    assert "missing_file" in _codes(AttemptPaths(linked))


def _relation(calls: list[dict[str, Any]], relation_id: str, target: str) -> dict[str, Any]:
    return {
        "schema": "roller.relation/v1",
        "relation_id": relation_id,
        "type": "result_in_context",
        "status": "established",
        "parent_participant_id": calls[0]["participant_id"],
        "child_participant_id": None,
        "source_call_id": calls[0]["call_id"],
        "target_call_id": target,
        "tool_call_id": "toolu_x",
        "model_tool_ref": None,
        "evidence": [],
        "note": None,
    }


def _write_relations(copy: AttemptPaths, relations: list[dict[str, Any]]) -> None:
    """relations.jsonl replaced, the manifest re-hashed and recounted to agree with it."""
    data = b"".join((json.dumps(r, separators=(",", ":")) + "\n").encode() for r in relations)
    copy.relations.write_bytes(data)
    manifest = json.loads(copy.manifest.read_text())
    manifest["files"]["relations.jsonl"] = describe(data).model_dump()
    manifest["counts"]["relations"] = len(relations)
    copy.manifest.write_text(json.dumps(manifest))


def _calls(copy: AttemptPaths) -> list[dict[str, Any]]:
    return [json.loads(line) for line in copy.calls.read_text().splitlines()]


def test_a_dangling_relation_is_caught_even_with_a_consistent_manifest(copy: AttemptPaths) -> None:
    calls = _calls(copy)
    _write_relations(copy, [_relation(calls, "rel-tamper-00001", "call-does-not-exist")])
    assert _codes(copy) == {"dangling_call"}
    assert roller("validate", str(copy.root)).returncode == 1


def test_a_repeated_relation_id_is_caught_in_or_out_of_order(copy: AttemptPaths) -> None:
    """Ids in finalize's numbered order are kept as a run, others one by one
    (`SeenIds`): a repeat is found either way, and only the repeated id is named."""
    calls = _calls(copy)
    scope = json.loads(copy.manifest.read_text())["capture_scope"]
    target = calls[-1]["call_id"]
    ids = [f"rel-{scope}-{n:05d}" for n in (1, 2, 5, 3, 2, 4, 5)] + ["rel-x", "rel-x"]
    _write_relations(copy, [_relation(calls, rid, target) for rid in ids])
    report = validate_attempt(copy)
    assert {(p.code, p.where) for p in report.problems} == {
        ("duplicate_id", f"relation rel-{scope}-00002"),
        ("duplicate_id", f"relation rel-{scope}-00005"),
        ("duplicate_id", "relation rel-x"),
    }
    assert roller("validate", str(copy.root)).returncode == 1


def test_an_unreadable_path_exits_2(tmp_path: Path) -> None:
    assert roller("validate", str(tmp_path)).returncode == 2
    (tmp_path / "manifest.json").write_text("{not json")
    proc = roller("validate", str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr

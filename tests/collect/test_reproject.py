"""`roller reproject SAMPLE_DIR --out COPY`: the copy is re-finalized from retained raw/
and validated, its main trajectory derived again (root only); the original stays
byte-identical, whatever it held."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from tests.collect.runs_support import AGENT
from tests.collect.test_resume import mix_subagent_steps
from tests.support.captures import roller

from roller.capture.integrity import validate_attempt
from roller.capture.layout import RunPaths, SamplePaths
from roller.collect.verdicts import judge_sample


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def collected(run_dir: Path, retention: str) -> SamplePaths:
    done = roller(
        "collect", "--harness", "generic", "--api-base", "mock:plain", "--capture-debug",
        retention, "--run-dir", str(run_dir), "--", sys.executable, str(AGENT), "delegate",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return RunPaths(run_dir).sample("sample-0001")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> SamplePaths:
    """A sample with raw/ kept whose stored main trajectory holds a child's call."""
    sample = collected(tmp_path_factory.mktemp("reproject") / "run", "full")
    mix_subagent_steps(sample)
    assert judge_sample(sample).refusal is not None
    return sample


def test_reproject_fixes_the_copy_and_never_touches_the_original(
    mixed: SamplePaths, tmp_path: Path
) -> None:
    before = tree_hashes(mixed.root)
    copy = tmp_path / "copy"
    done = roller("reproject", str(mixed.root), "--out", str(copy))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt-0001: re-finalized from raw/, main trajectory re-derived, valid" in done.stdout
    assert tree_hashes(mixed.root) == before
    reprojected = SamplePaths(copy)
    (attempt,) = reprojected.attempts()
    assert validate_attempt(attempt).ok
    assert judge_sample(reprojected).refusal is None
    record = json.loads(reprojected.trajectory_file(1).read_text())
    manifest = json.loads(attempt.manifest.read_text())
    (root,) = [p for p in manifest["participants"] if p["role"] == "root"]
    assert record["call_ids"] == root["call_ids"]
    assert roller("validate", str(copy)).returncode == 0


def test_a_sample_whose_raw_was_cleaned_keeps_its_formal_files(tmp_path: Path) -> None:
    sample = collected(tmp_path / "run", "on-error")
    mix_subagent_steps(sample)
    before = tree_hashes(sample.root)
    copy = tmp_path / "copy"
    done = roller("reproject", str(sample.root), "--out", str(copy))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no raw/: formal files kept, main trajectory re-derived, valid" in done.stdout
    assert tree_hashes(sample.root) == before
    (attempt,) = SamplePaths(copy).attempts()
    assert attempt.calls.read_bytes() == sample.attempts()[0].calls.read_bytes()
    assert judge_sample(SamplePaths(copy)).refusal is None


def test_reproject_never_writes_over_an_existing_path(mixed: SamplePaths, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    done = roller("reproject", str(mixed.root), "--out", str(tmp_path / "taken"))
    assert done.returncode == 2 and "exists" in done.stderr
    inside = roller("reproject", str(mixed.root), "--out", str(mixed.root / "copy"))
    assert inside.returncode == 2 and "the original is never written" in inside.stderr
    assert not (mixed.root / "copy").exists()

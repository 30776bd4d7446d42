"""The acceptance checks over a real capture (Claude Code `parallel`, finalized from its
recorded tape and native logs): clean it passes; each kind of defect makes it fail."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from roller.acceptance.checks import RunEvidence, check_run, oracle_failures
from roller.acceptance.profiles import profile_for
from roller.acceptance.scenarios import scenario
from roller.capture.layout import AttemptPaths
from roller.capture.reader import read_attempt
from roller.finalize.attempt import finalize_attempt
from roller.harnesses.acceptance import Scenario
from tests.harnesses.claude_code_fixtures import attempt_dir, lines, subagent_files, write_lines

SECRET = "sk-roller-acceptance-test-value"


def _resolved(name: str) -> Scenario:
    resolved = profile_for("claude-code").resolve(scenario(name))
    assert isinstance(resolved, Scenario)
    return resolved


def _run_dir(tmp_path: Path, corrupt: bool = False) -> Path:
    """A run directory holding the finalized `parallel` fixture as its one attempt."""
    run = tmp_path / "run"
    built = attempt_dir("parallel", tmp_path / "build")
    if corrupt:
        agents = subagent_files(built.native)
        path = agents[sorted(agents)[0]]
        values = lines(path)
        for v in values:
            if v.get("type") == "assistant":
                v["message"]["id"] = "msg_01CorruptedXXXXXXXXXXXX"
        write_lines(path, values)
    target = run / "samples" / "sample-0001" / "capture" / "attempt-0001"
    target.parent.mkdir(parents=True)
    shutil.move(built.root, target)
    finalize_attempt(AttemptPaths(target))
    return run


def _evidence(run: Path, **changes: object) -> RunEvidence:
    ev = RunEvidence(
        harness="claude-code",
        scenario=_resolved("parallel"),
        run_dir=run,
        exit_code=0,
        collect_output=b"ok",
        served=5,
        secrets=(SECRET,),
        with_mock=True,
    )
    return dataclasses.replace(ev, **changes)  # type: ignore[arg-type]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return _run_dir(tmp_path)


def test_a_correct_capture_passes(run: Path) -> None:
    assert check_run(_evidence(run)) == []


def test_a_different_mock_count_fails(run: Path) -> None:
    assert check_run(_evidence(run, served=6)) == ["the mock served 6 requests, calls.jsonl has 5"]


def test_a_secret_anywhere_under_the_run_fails(run: Path) -> None:
    native = next(run.glob("samples/*/capture/*/raw/native/projects/*/*.jsonl"))
    native.write_text(native.read_text() + SECRET)
    failures = check_run(_evidence(run))
    assert failures == [f"a credential value is on disk: {native.relative_to(run)}"]
    assert check_run(_evidence(run, secrets=(), collect_output=SECRET.encode())) == []
    output = check_run(_evidence(run, collect_output=b"key " + SECRET.encode()))
    assert "a credential value is on disk: collect output" in output


def test_the_wrong_expectations_fail(run: Path) -> None:
    failures = check_run(_evidence(run, scenario=_resolved("nested")))
    assert "2 child participants, expected 2" not in failures
    assert "deepest participant at depth 1, expected 2" in failures
    failures = check_run(_evidence(run, scenario=_resolved("foreground")))
    assert "2 child participants, expected 1" in failures
    assert any(f.startswith("2 launch_acknowledged relation(s), expected none") for f in failures)
    plain = check_run(_evidence(run, scenario=_resolved("file-sharing")))
    assert "no root call's input carries a tool result with 'roller-shared'" in plain


def test_a_failed_collect_fails(run: Path) -> None:
    assert check_run(_evidence(run, exit_code=1)) == ["roller collect exited 1"]


def test_a_corrupted_native_log_fails_on_attribution_and_coverage(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, corrupt=True)
    failures = check_run(_evidence(run))
    assert any("unattributed" in f for f in failures)
    assert any(f.startswith("capture_status partial") for f in failures)
    assert any(f.startswith("coverage:") for f in failures)


def test_the_oracle_catches_a_call_charged_to_the_wrong_child(run: Path) -> None:
    capture = read_attempt(next(run.glob("samples/*/capture/attempt-*")))
    parts = {p.participant_id: p for p in capture.manifest.participants}
    expect = _resolved("parallel").expect
    assert oracle_failures(capture.calls, parts, expect) == []
    children = [p.participant_id for p in parts.values() if p.role == "child"]
    calls = [
        c.model_copy(update={"participant_id": children[0]})
        if c.participant_id == children[1]
        else c
        for c in capture.calls
    ]
    failures = oracle_failures(calls, parts, expect)
    assert any("made calls for two different agents" in f for f in failures)
    root = next(p for p in parts.values() if p.role == "root").participant_id
    calls = [c.model_copy(update={"participant_id": root}) for c in capture.calls]
    failures = oracle_failures(calls, parts, expect)
    assert any("roller attributed it to a root" in f for f in failures)

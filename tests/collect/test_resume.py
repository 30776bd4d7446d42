"""Runs of many samples, and `roller collect --resume`, against a mock model the test owns.

Every `roller collect` here is the real command (a subprocess) collecting a generic SDK
program (tests/collect/sdk_agent.py) from `--api-base http://127.0.0.1:P`, the test's own
mock, so each test counts exactly the model requests a resume makes: reused samples make
none, a tampered or missing one makes its own, and a refused resume makes none at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.collect.runs_support import KEYS, CountingMock, counting_mock, generic_run, write_tasks
from tests.support.captures import roller

from roller.capture.files import describe
from roller.capture.layout import RunPaths, SamplePaths
from roller.capture.reader import read_json_model
from roller.capture.summary_record import RunSummary

IDS = ("a", "b", "c")


@pytest.fixture(scope="module")
def mock() -> Iterator[CountingMock]:
    with counting_mock() as running:
        yield running


def collect(*args: str) -> tuple[int, str]:
    done = roller(*args, env={**os.environ, **KEYS})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, mock: CountingMock) -> Path:
    """Three samples, two calls each, raw/ kept (so an attempt can be re-finalized)."""
    base = tmp_path_factory.mktemp("runs")
    tasks = write_tasks(base / "tasks.jsonl", IDS)
    before = mock.requests
    code, out = collect(
        *generic_run(mock.url, base / "run", tasks, "--concurrency", "2", "--capture-debug", "full")
    )
    assert code == 0, out
    assert mock.requests - before == 2 * len(IDS)
    return base / "run"


@pytest.fixture
def run(base_run: Path, tmp_path: Path) -> RunPaths:
    shutil.copytree(base_run, tmp_path / "run")
    return RunPaths(tmp_path / "run")


def summary(run: RunPaths) -> RunSummary:
    return read_json_model(run.summary, RunSummary)


def outcomes(run: RunPaths, sample_id: str) -> list[str]:
    (s,) = [s for s in summary(run).samples if s.sample_id == sample_id]
    return [a.outcome for a in s.attempts]


def attempt_dirs(run: RunPaths) -> dict[str, list[str]]:
    return {s.sample_id: [a.root.name for a in s.attempts()] for s in run.all_samples()}


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_a_run_collects_every_task_snapshots_them_and_writes_a_summary(base_run: Path) -> None:
    run = RunPaths(base_run)
    assert run.tasks_snapshot.read_bytes() == (base_run.parent / "tasks.jsonl").read_bytes()
    s = summary(run)
    assert (s.samples_total, s.succeeded, s.failed, s.reused) == (3, 3, 0, 0)
    assert [x.sample_id for x in s.samples] == list(IDS)
    for sample in s.samples:
        assert (sample.status, sample.calls, sample.exportable_calls) == ("succeeded", 2, 2)
        assert [a.outcome for a in sample.attempts] == ["succeeded"]
        assert sample.wall_s > 0
    # each sample got its own task's prompt, through its own proxy and tape
    for sid in IDS:
        (attempt,) = SamplePaths(run.samples / sid).attempts()
        calls = [json.loads(line) for line in attempt.calls.read_text().splitlines()]
        assert {c["context"]["messages"][0]["content"] for c in calls} == {f"task {sid}"}
    assert roller("validate", str(base_run)).returncode == 0


def test_resume_reuses_every_valid_sample_and_calls_no_model(
    run: RunPaths, mock: CountingMock
) -> None:
    before, hashed = mock.requests, tree_hash(run.samples)
    code, out = collect("collect", "--resume", str(run.root))
    assert code == 0, out
    assert mock.requests == before
    assert tree_hash(run.samples) == hashed
    assert summary(run).reused == 3
    assert "a: reused attempt-0001 succeeded" in out


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    at = data.index(b"mock-model")
    data[at] = ord("X")
    path.write_bytes(bytes(data))


def _dangling(sample: SamplePaths) -> None:
    """A relation naming a call that does not exist, with the manifest re-hashed to match,
    so only the reference check can see it."""
    (attempt,) = sample.attempts()
    first = json.loads(attempt.calls.read_text().splitlines()[0])
    relation = {
        "schema": "roller.relation/v1", "relation_id": "rel-tamper-00001",
        "type": "result_in_context", "status": "established",
        "parent_participant_id": first["participant_id"], "child_participant_id": None,
        "source_call_id": first["call_id"], "target_call_id": "call-does-not-exist",
        "tool_call_id": "toolu_x", "model_tool_ref": None, "evidence": [], "note": None,
    }  # fmt: skip
    data = (json.dumps(relation) + "\n").encode()
    attempt.relations.write_bytes(data)
    manifest = json.loads(attempt.manifest.read_text())
    manifest["files"]["relations.jsonl"] = describe(data).model_dump()
    manifest["counts"]["relations"] = 1
    attempt.manifest.write_text(json.dumps(manifest))


TAMPERING = {
    "modified": (lambda s: _flip_byte(s.attempts()[0].calls), "hash_mismatch"),
    "missing": (lambda s: s.attempts()[0].relations.unlink(), "missing_file"),
    "dangling": (_dangling, "dangling_call"),
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
def test_a_tampered_sample_is_collected_again_and_the_old_attempt_kept(
    run: RunPaths, mock: CountingMock, how: str
) -> None:
    tamper, code_name = TAMPERING[how]
    sample = run.sample("b")
    tamper(sample)
    old = tree_hash(sample.attempts()[0].root)
    before = mock.requests
    code, out = collect("collect", "--resume", str(run.root))
    assert code == 0, out
    assert mock.requests - before == 2  # b's two calls, nobody else's
    assert attempt_dirs(run) == {
        "a": ["attempt-0001"],
        "b": ["attempt-0001", "attempt-0002"],
        "c": ["attempt-0001"],
    }
    assert tree_hash(sample.attempts()[0].root) == old  # kept exactly as found
    assert outcomes(run, "b") == ["invalid", "succeeded"]
    assert f"b: attempt-0001 invalid: {code_name}" in out
    (b,) = [s for s in summary(run).samples if s.sample_id == "b"]
    assert b.attempts[0].problems and b.attempts[0].problems[0].startswith(code_name)


def test_an_attempt_left_without_a_manifest_is_finalized_from_raw_and_then_judged(
    run: RunPaths, mock: CountingMock
) -> None:
    attempt = run.sample("a").attempts()[0]
    attempt.manifest.unlink()  # as roller killed between the tape and the publication
    before = mock.requests
    code, out = collect("collect", "--resume", str(run.root))
    assert code == 0, out
    assert mock.requests == before
    assert attempt.manifest.exists()
    assert "a: recovered from raw/: attempt-0001 succeeded" in out
    (a,) = [s for s in summary(run).samples if s.sample_id == "a"]
    assert a.reused and a.attempts[0].recovered
    assert roller("validate", str(run.root)).returncode == 0


REFUSED = {
    "capture mode": (
        ["--capture-calls"],
        "capture mode (--capture-calls): run has False, asked for True",
    ),
    "harness": (
        ["--harness", "claude-code"],
        "harness: run has 'generic', asked for 'claude-code'",
    ),
    "api base": (["--api-base", "mock:plain"], "api base: run has 'http://127.0.0.1:"),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_resume_refuses_a_different_mode_before_any_model_call(
    run: RunPaths, mock: CountingMock, what: str
) -> None:
    flags, message = REFUSED[what]
    before, hashed = mock.requests, tree_hash(run.root)
    code, out = collect("collect", "--resume", str(run.root), *flags)
    assert code == 2, out
    assert "resume cannot mix modes" in out and message in out
    assert "Collect into a new --run-dir" in out
    assert mock.requests == before
    assert tree_hash(run.root) == hashed


@pytest.fixture(scope="module")
def delegating_run(tmp_path_factory: pytest.TempPathFactory, mock: CountingMock) -> Path:
    """One sample whose program declares a root and a child (x-roller-* headers)."""
    base = tmp_path_factory.mktemp("delegating")
    tasks = write_tasks(base / "tasks.jsonl", ["d"])
    args = generic_run(mock.url, base / "run", tasks, "--capture-debug", "full", mode="delegate")
    code, out = collect(*args)
    assert code == 0, out
    return base / "run"


def mix_subagent_steps(sample: SamplePaths) -> str:
    """Make the stored main trajectory hold the child's call, as an older roller's main
    trajectory could; returns that call id."""
    (attempt,) = sample.attempts()
    manifest = json.loads(attempt.manifest.read_text())
    (child,) = [p for p in manifest["participants"] if p["role"] == "child"]
    stored = sample.trajectory_file(1)
    record = json.loads(stored.read_text())
    record["call_ids"].append(child["call_ids"][0])
    stored.write_text(json.dumps(record) + "\n")
    return str(child["call_ids"][0])


def test_a_sample_whose_main_trajectory_holds_subagent_steps_is_refused(
    delegating_run: Path, tmp_path: Path, mock: CountingMock
) -> None:
    run = RunPaths(tmp_path / "run")
    shutil.copytree(delegating_run, run.root)
    child_call = mix_subagent_steps(run.sample("d"))
    before, hashed = mock.requests, tree_hash(run.root)
    code, out = collect("collect", "--resume", str(run.root))
    assert code == 2, out
    assert "sample d: its main trajectory" in out and f"holds subagent steps ({child_call})" in out
    assert "collect into a new --run-dir" in out
    assert f"roller reproject {run.sample('d').root} --out COPY" in out
    assert mock.requests == before
    assert tree_hash(run.root) == hashed


def test_bad_task_lines_are_all_refused_before_anything_runs(
    tmp_path: Path, mock: CountingMock
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        {"id": "ok", "prompt": "fine"},
        {"id": "../escape", "prompt": "x"},
        {"id": "ok", "prompt": "again"},
        {"id": "no-prompt"},
        {"id": "both", "prompt": "x", "turns": ["y"]},
        {"id": "extra", "prompt": "x", "colour": "red"},
        {"id": "nofiles", "prompt": "x", "files": "missing-folder"},
        {"id": "opt", "prompt": "x", "options": {"depth": "3"}},
    ]
    tasks.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    before = mock.requests
    code, out = collect(*generic_run(mock.url, tmp_path / "run", tasks))
    assert code == 2, out
    assert "9 bad line(s), nothing was run" not in out  # line 1 is fine
    assert "8 bad line(s), nothing was run" in out
    for line, reason in (
        (2, "invalid sample id '../escape'"),
        (3, "id 'ok' is already used on line 1"),
        (4, 'needs "prompt"'),
        (5, 'give "prompt" or "turns", not both'),
        (6, "unknown key(s) colour"),
        (7, "\"files\" 'missing-folder' is not a folder"),
        (8, "unknown generic option(s) depth"),
        (9, "not JSON"),
    ):
        assert f"line {line}: {reason}" in out, out
    assert not (tmp_path / "run").exists()
    assert mock.requests == before


def test_a_task_folder_is_copied_into_each_attempt_s_work_dir(
    tmp_path: Path, mock: CountingMock
) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "README").write_text("the task's files\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "f", "prompt": "read it", "files": "repo"}) + "\n")
    probe = (
        "import os, sys; text = open(os.environ['ROLLER_SCRATCH_DIR'] + '/README').read(); "
        'sys.exit(0 if text == "the task\'s files\\n" else 4)'
    )
    args = [
        "collect", "--harness", "generic", "--api-base", mock.url, "--tasks", str(tasks),
        "--run-dir", str(tmp_path / "run"), "--", "python3", "-c", probe,
    ]  # fmt: skip
    code, out = collect(*args)
    run = RunPaths(tmp_path / "run")
    assert (run.task_files("f") / "README").read_text() == "the task's files\n"
    (s,) = summary(run).samples
    assert s.execution_status == "completed", out  # the program found the file
    assert code == 0, out

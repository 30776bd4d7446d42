"""`roller collect --executor ray` on a local multi-node Ray cluster (tests/collect/
ray_support.py: a head and two one-CPU worker nodes on 127.0.0.1, one per module).

Shown: a 6-sample delegating run through the real CLI validates sample by sample and
has the same samples, participants and relations as a local-executor run of the same
tasks (structure compared, not ids: ids carry each attempt's random scope); `--resume`
of that run on Ray reuses every validated sample (no model call; a damaged sample makes
exactly its own calls); killing a worker node mid-run still completes the run, the
affected sample holding an interrupted attempt (with the reason) and a later valid one;
with `--shared-run-dir` the nodes write the run directory themselves; a stopped run
(Ctrl-C) publishes its running attempts as interrupted with the calls they made, as a
local run does, and leaves the queued ones not run.

The 6-sample run is the real Claude Code against the mock's `spawn-one` (each sample's
root delegates to one subagent through its Task tool: 4 calls, a root and a child
participant, and the spawn relations), the cheapest harness whose delegation gives
relations; each node finds it in its roller cache (`install_once`). The node-kill run
is a generic command delegating through roller's x-roller-* headers
(tests/collect/sdk_agent.py `delegate-slow`: a root call, 3 s, a child call), which is
all that test needs and costs a fraction of Claude Code's CPU on this 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from tests.collect.ray_support import RAY_ENV, LocalCluster, local_cluster
from tests.collect.runs_support import AGENT, CountingMock, counting_mock, write_tasks
from tests.support.captures import roller
from tests.support.e2e import installed
from tests.support.temp_dirs import roller_temp_dirs

from roller.capture.integrity import validate_attempt
from roller.capture.layout import RunPaths
from roller.capture.reader import read_attempt, read_json_model, read_manifest
from roller.capture.summary_record import RunSummary
from roller.collect import ray_executor
from roller.collect.collection import RunEvent, RunRequest, RunResult, collect_run
from roller.collect.executor import ExecutorChoice, LocalExecutor
from roller.collect.ray_executor import RayExecutor
from roller.collect.runs import RunSpec

IDS = tuple(f"s{n}" for n in range(1, 7))
CALLS = 4  # a Claude Code sample on spawn-one: root, its Task call's child, and back
Structure = tuple[str, str, int, list[tuple[object, ...]], list[tuple[object, ...]]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster() as running:
        yield running


@pytest.fixture(scope="module")
def mock() -> Iterator[CountingMock]:
    with counting_mock("spawn-one") as running:
        yield running


def _generic(url: str, mode: str) -> RunSpec:
    return RunSpec(
        harness="generic", harness_version=None, api_base=url, capture_calls=False,
        capture_debug="on-error", model=None, options={},
        command=(sys.executable, str(AGENT), mode), timeout_s=60.0, attempts=1,
        single_agent=True,
    )  # fmt: skip


def _claude(url: str) -> RunSpec:
    return RunSpec(
        harness="claude-code", harness_version=None, api_base=url, capture_calls=True,
        capture_debug="on-error", model=None, options={}, command=(), timeout_s=180.0,
        attempts=1, single_agent=False,
    )  # fmt: skip


def _tasks(path: Path, ids: tuple[str, ...]) -> Path:
    lines = (json.dumps({"id": i, "prompt": f"Use a subagent to say hi ({i})"}) for i in ids)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def structure(run: RunPaths) -> dict[str, Structure]:
    """Per sample, its latest attempt: statuses, calls, participants and relations by role."""
    found: dict[str, Structure] = {}
    for sample in run.all_samples():
        attempt = sample.attempts()[-1]
        report = validate_attempt(attempt)
        assert report.ok, (attempt.root, report.problems)
        capture = read_attempt(attempt)
        m = capture.manifest
        roles = {p.participant_id: p.role for p in m.participants}
        participants = sorted((p.role, p.depth, p.name, len(p.call_ids)) for p in m.participants)
        relations = sorted(
            (r.type, r.status, roles.get(r.parent_participant_id or ""),
             roles.get(r.child_participant_id or ""))
            for r in capture.relations
        )  # fmt: skip
        found[sample.sample_id] = (
            m.execution_status,
            m.capture_status,
            m.counts.calls,
            participants,
            relations,
        )
    return found


def cli(*args: str) -> tuple[int, str]:
    done = roller(*args, env={**os.environ, **RAY_ENV}, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def ray_run(
    cluster: LocalCluster, mock: CountingMock, tmp_path_factory: pytest.TempPathFactory
) -> RunPaths:
    installed("claude-code")
    base = tmp_path_factory.mktemp("ray")
    tasks = _tasks(base / "tasks.jsonl", IDS)
    before = mock.requests
    code, out = cli(
        "collect", "--harness", "claude-code", "--api-base", mock.url, "--capture-calls",
        "--tasks", str(tasks), "--run-dir", str(base / "run"), "--timeout", "180",
        "--executor", "ray", "--ray-address", cluster.address,
    )  # fmt: skip
    assert code == 0, out
    assert mock.requests - before == CALLS * len(IDS)
    return RunPaths(base / "run")


@pytest.mark.e2e
def test_six_delegating_samples_on_ray_equal_a_local_run(
    ray_run: RunPaths, mock: CountingMock, tmp_path: Path
) -> None:
    request = RunRequest(
        tmp_path / "local", _claude(mock.url), tasks_file=_tasks(tmp_path / "tasks.jsonl", IDS)
    )
    asyncio.run(collect_run(request, executor=LocalExecutor(2)))
    local, on_ray = structure(RunPaths(tmp_path / "local")), structure(ray_run)
    assert sorted(on_ray) == list(IDS)
    assert on_ray == local
    # a delegating run: a root and a child participant, related, in every sample
    for status, capture, calls, participants, relations in on_ray.values():
        assert (status, capture, calls) == ("completed", "complete", CALLS)
        assert [p[0] for p in participants] == ["child", "root"]
        assert relations, "the delegation is related"
    summary = read_json_model(ray_run.summary, RunSummary)
    assert (summary.samples_total, summary.succeeded) == (6, 6)
    assert summary.calls == CALLS * 6
    # each sample came back through the object store: nothing was left on the nodes
    assert not [a for s in ray_run.all_samples() for a in s.attempts() if a.raw.exists()]


@pytest.mark.e2e
def test_resume_of_a_ray_run_reuses_its_validated_samples(
    ray_run: RunPaths, cluster: LocalCluster, mock: CountingMock, tmp_path: Path
) -> None:
    run = RunPaths(tmp_path / "run")
    shutil.copytree(ray_run.root, run.root)
    before = mock.requests
    flags = ("--executor", "ray", "--ray-address", cluster.address)
    code, out = cli("collect", "--resume", str(run.root), *flags)
    assert code == 0, out
    assert mock.requests == before  # every sample reused: no model call
    summary = read_json_model(run.summary, RunSummary)
    assert [s.reused for s in summary.samples] == [True] * 6

    run.sample("s3").attempts()[0].calls.write_bytes(b"")  # one sample's capture damaged
    code, out = cli("collect", "--resume", str(run.root), *flags)
    assert code == 0, out
    assert mock.requests - before == CALLS  # s3's own calls, nobody else's
    summary = read_json_model(run.summary, RunSummary)
    assert [s.sample_id for s in summary.samples if not s.reused] == ["s3"]
    (s3,) = [s for s in summary.samples if s.sample_id == "s3"]
    assert [a.outcome for a in s3.attempts] == ["invalid", "succeeded"]  # the old one kept
    assert structure(run) == structure(ray_run)


def test_a_shared_run_dir_is_written_by_the_nodes_themselves(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """On one machine every node sees the run directory: nothing travels back."""
    run = RunPaths(tmp_path / "run")
    choice = ExecutorChoice("ray", ray_address=cluster.address, shared_run_dir=True)
    with counting_mock() as mock:
        request = RunRequest(
            run.root, _generic(mock.url, "delegate"),
            tasks_file=write_tasks(tmp_path / "tasks.jsonl", ("a", "b")),
        )  # fmt: skip
        result = asyncio.run(collect_run(request, executor=RayExecutor(choice)))
        assert mock.requests == 4
    assert result.summary.succeeded == 2
    for sample in run.all_samples():
        (attempt,) = sample.attempts()
        assert validate_attempt(attempt).ok
        assert read_manifest(attempt).execution_status == "completed"


@contextmanager
def _left_on_nodes_removed() -> Iterator[None]:
    """What killed workers leave on their nodes (here: this machine's temporary
    directory) removed after the test."""
    before = roller_temp_dirs()
    try:
        yield
    finally:
        for left in roller_temp_dirs() - before:
            shutil.rmtree(left, ignore_errors=True)


def _stopped_after_a_call(cluster: LocalCluster, tmp_path: Path) -> tuple[RunPaths, RunResult, int]:
    """Four delegating samples on the two one-CPU nodes, stopped (Ctrl-C: `stop`) once
    one has made a model call; the run, its result and the calls the mock answered."""
    run = RunPaths(tmp_path / "run")
    stop_holder: list[asyncio.Event] = []

    def on_event(event: RunEvent) -> None:
        if " 1 model call(s)" in (event.status or "") and not stop_holder[0].is_set():
            stop_holder[0].set()

    async def collect(request: RunRequest) -> RunResult:
        stop_holder.append(asyncio.Event())
        executor = RayExecutor(ExecutorChoice("ray", ray_address=cluster.address))
        return await collect_run(request, on_event, stop_holder[0], executor)

    with counting_mock() as mock:
        request = RunRequest(
            run.root, _generic(mock.url, "delegate-slow"),
            tasks_file=write_tasks(tmp_path / "tasks.jsonl", ("a", "b", "c", "d")),
        )  # fmt: skip
        result = asyncio.run(collect(request))
        answered = mock.requests
    assert result.stopped and result.summary.stopped
    # the tasks still queued in Ray never started: no attempt, as a local sample
    # still waiting for its slot
    assert {s.status for s in result.summary.samples if not s.attempts} == {"not_run"}
    return run, result, answered


def test_stopping_a_ray_run_keeps_what_its_running_attempts_captured(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """As locally: each running attempt ends its harness and is published as
    interrupted with every call it made, back from its node, which keeps nothing of it."""
    before = roller_temp_dirs()
    run, result, answered = _stopped_after_a_call(cluster, tmp_path)
    ran = [s for s in result.summary.samples if s.attempts]
    assert ran and len(ran) <= 2  # two nodes: at most two were running
    kept = 0
    for s in ran:
        (attempt,) = s.attempts
        assert (attempt.outcome, attempt.problems) == ("interrupted", [])
        capture = read_attempt(run.sample(s.sample_id).attempt(1))
        assert validate_attempt(capture.paths).ok
        assert capture.manifest.execution_status == "interrupted"
        assert attempt.calls == len(capture.calls)
        kept += len(capture.calls)
    assert kept == answered >= 1  # every call the model answered, in a capture
    assert roller_temp_dirs() <= before


def test_a_stopped_ray_attempt_that_does_not_end_in_time_is_recorded_lost(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No time to end (`STOP_GRACE_S`): the task is cancelled, its worker killed and the
    harness with it; the attempt is recorded as interrupted with why, where it ran."""
    monkeypatch.setattr(ray_executor, "STOP_GRACE_S", 0.0)
    with _left_on_nodes_removed():
        _run, result, _answered = _stopped_after_a_call(cluster, tmp_path)
    ran = [s for s in result.summary.samples if s.attempts]
    assert ran and len(ran) <= 2
    for s in ran:
        assert [a.outcome for a in s.attempts] == ["interrupted"]
        (problem,) = s.attempts[0].problems
        assert problem.startswith("lost: stopped (Ctrl-C) (on ")  # and the node it ran on


def test_killing_a_worker_node_mid_run_still_completes_the_run(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Runs last in the module: it removes one of the cluster's two worker nodes."""
    ids = ("k1", "k2", "k3", "k4")
    request = RunRequest(
        tmp_path / "run", _generic("http://127.0.0.1:9", "delegate-slow"),
        tasks_file=write_tasks(tmp_path / "tasks.jsonl", ids),
    )  # fmt: skip
    workers = set(cluster.node_ids())
    killed: list[tuple[str, str]] = []  # (sample, node)
    running_on: dict[str, str] = {}

    def on_event(event: RunEvent) -> None:
        status, sample = event.status or "", event.sample_id
        if not sample:
            return
        if status.startswith("running on node "):
            running_on[sample] = status.removeprefix("running on node ")
        # its root call made (the sample now waits 3 s before its child's), on a worker
        if not killed and " 1 model call(s)" in status and running_on.get(sample) in workers:
            killed.append((sample, running_on[sample]))
            cluster.kill(running_on[sample])

    executor = RayExecutor(ExecutorChoice("ray", ray_address=cluster.address))
    with _left_on_nodes_removed(), counting_mock() as mock:
        request = replace(request, spec=_generic(mock.url, "delegate-slow"))
        result = asyncio.run(collect_run(request, on_event, executor=executor))
    assert killed, "no sample was seen running on a worker node"
    (victim, node) = killed[0]
    run = RunPaths(tmp_path / "run")
    assert result.summary.succeeded == len(ids)
    lost, *later = run.sample(victim).attempts()
    assert validate_attempt(lost).ok
    assert read_manifest(lost).execution_status == "interrupted"
    assert later and all(validate_attempt(a).ok for a in later)
    assert read_manifest(later[-1]).execution_status == "completed"
    (summary,) = [s for s in result.summary.samples if s.sample_id == victim]
    assert summary.attempts[0].outcome == "interrupted"
    assert summary.attempts[0].problems[0].startswith("lost: ")
    assert summary.attempts[-1].outcome == "succeeded"
    record = json.loads(run.sample(victim).lost_file(1).read_text())
    assert record["reason"] and record["where"] == node
    assert node not in cluster.node_ids()

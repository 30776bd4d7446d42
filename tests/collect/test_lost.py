"""An attempt the executor lost (its runner's worker or node died) is recorded by the run
driver, whatever the executor: kept as `interrupted` with the reason, never reused, and
the sample gets a new attempt that uses none of `--attempts`.

The executor here is the local one, wrapped so that a chosen sample's first attempt is
"lost" before it starts — the same `AttemptLost` the Ray executor returns for a
WorkerCrashedError — so this proves the one code path both executors share.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from tests.collect.runs_support import AGENT, KEYS, counting_mock, write_tasks

from roller.capture.files import atomic_write
from roller.capture.integrity import validate_attempt
from roller.capture.layout import RunPaths
from roller.capture.reader import dump_json, read_json_model, read_manifest
from roller.capture.summary_record import RunSummary
from roller.collect.collection import LOST_RETRIES, RunRequest, collect_run
from roller.collect.executor import LocalExecutor
from roller.collect.lost import AttemptLost
from roller.collect.runs import RunSpec
from roller.collect.session import AttemptDone, AttemptJob, Report, attempt_inputs
from roller.collect.tasks import Task
from roller.collect.verdicts import judge_attempt


class Losing:
    """The local executor, except that `lose` attempts of sample `victim` are lost."""

    def __init__(self, victim: str, lose: int) -> None:
        self.inner, self.victim, self.left = LocalExecutor(2), victim, lose

    async def run(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | AttemptLost | None:
        if job.task.id == self.victim and self.left > 0:
            self.left -= 1
            return AttemptLost("WorkerCrashedError: the worker died", where="node-x")
        return await self.inner.run(job, report, stop)

    def close(self) -> None:
        pass


def _request(tmp_path: Path, url: str) -> RunRequest:
    spec = RunSpec(
        harness="generic", harness_version=None, api_base=url, capture_calls=False,
        capture_debug="on-error", model=None, options={},
        command=(sys.executable, str(AGENT), "plain"), timeout_s=60.0, attempts=1,
        single_agent=True,
    )  # fmt: skip
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b"])
    return RunRequest(tmp_path / "run", spec, tasks_file=tasks)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)


def test_a_lost_attempt_is_kept_interrupted_with_its_reason_and_retried(tmp_path: Path) -> None:
    with counting_mock() as mock:
        request = _request(tmp_path, mock.url)
        result = asyncio.run(collect_run(request, executor=Losing("b", 1)))
        assert mock.requests == 4  # two per sample; the lost attempt made none
    run = RunPaths(tmp_path / "run")
    first, second = run.sample("b").attempts()
    for attempt in (first, second):
        assert validate_attempt(attempt).ok
    assert read_manifest(first).execution_status == "interrupted"
    assert read_manifest(first).counts.calls == 0
    assert read_manifest(second).execution_status == "completed"
    summary = read_json_model(run.summary, RunSummary)
    assert (summary.succeeded, summary.failed) == (2, 0)
    (b,) = [s for s in summary.samples if s.sample_id == "b"]
    assert [a.outcome for a in b.attempts] == ["interrupted", "succeeded"]
    assert b.attempts[0].problems == ["lost: WorkerCrashedError: the worker died (on node-x)"]
    assert result.samples[1].last is not None
    assert result.samples[1].last.attempt == second

    # --resume judges the lost attempt from disk the same way, and reuses the sample.
    resume = RunRequest(run.root, request.spec, resume=True)
    again = asyncio.run(collect_run(resume, executor=LocalExecutor(1)))
    (b,) = [s for s in again.summary.samples if s.sample_id == "b"]
    assert b.reused and b.attempts[0].problems[0].startswith("lost: WorkerCrashedError")


def test_a_sample_lost_again_and_again_ends_failed_and_the_run_ends(tmp_path: Path) -> None:
    with counting_mock() as mock:
        result = asyncio.run(
            collect_run(_request(tmp_path, mock.url), executor=Losing("a", LOST_RETRIES + 5))
        )
    run = RunPaths(tmp_path / "run")
    assert len(run.sample("a").attempts()) == LOST_RETRIES + 1
    (a,) = [s for s in result.summary.samples if s.sample_id == "a"]
    assert a.status == "failed"
    assert {x.outcome for x in a.attempts} == {"interrupted"}


def test_an_attempt_killed_before_its_proxy_started_recovers_as_interrupted(
    tmp_path: Path,
) -> None:
    # roller killed between writing raw/attempt.json and starting the proxy: no tape
    # directory at all. Recovery used to raise (FileNotFoundError) out of finalize.
    spec = RunSpec(
        harness="generic", harness_version=None, api_base="mock:plain", capture_calls=False,
        capture_debug="on-error", model=None, options={}, command=(sys.executable, "-c", "0"),
        timeout_s=60.0, attempts=1, single_agent=True,
    )  # fmt: skip
    attempt = RunPaths(tmp_path / "run").sample("s1").attempt(1)
    job = AttemptJob(task=Task("s1", ()), attempt=attempt, spec=spec, install_dir=None)
    atomic_write(attempt.attempt_inputs, dump_json(attempt_inputs(job, None)))
    assert not attempt.tape.exists()

    verdict = judge_attempt(attempt)
    assert (verdict.outcome, verdict.recovered) == ("interrupted", True)
    assert validate_attempt(attempt).ok
    manifest = read_manifest(attempt)
    assert manifest.counts.calls == 0 and manifest.capture_status == "partial"

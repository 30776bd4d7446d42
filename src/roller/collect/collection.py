"""A collection run: many samples, concurrently, resumable — the one path `roller collect`
takes, for one `--prompt` task as for a tasks file or `--resume DIR`.

Order, and why (docs/collect.md):
1. Everything that can be refused is refused before anything is written or any model is
   called: flags, the tasks (every bad line, with its number), a run.json or task
   snapshot that differs from what is asked, a sample that exists with another task,
   and — after judging what the run directory holds (`roller.collect.verdicts`; an
   attempt roller was killed in is finalized from its raw/ first) — every sample whose
   stored main trajectory holds subagent steps.
2. The harness is installed when missing; run.json, the task snapshot and each
   sample.json are written. (Steps 1 and 2: `roller.collect.preparation`.)
3. Each sample that is not finished gets attempts from the executor (at most
   `--concurrency` at once, `roller.collect.executor`: local, or Ray) until one succeeds
   or its budget (`--attempts`) is used; every attempt is judged like a resumed one, so
   what this run collects and what a later `--resume` reuses are decided by the same
   rules, whichever executor ran it. An attempt the executor lost (its worker died) is
   recorded here as interrupted (`roller.collect.lost`) and the sample gets a new one; one
   roller itself failed on (a bug) is recorded with its traceback (`roller.collect.failure`)
   and uses an attempt. A failing sample never stops the run; Ctrl-C (`stop`) ends the
   running attempts (published as interrupted) and starts no more.
4. `summary.json` is written from the judged attempts, whatever happened.
Progress is reported as events (`RunEvent`): counts, and one plain line per notable
thing (a sample reused, an attempt judged); the CLI renders them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from roller.capture.files import atomic_write
from roller.capture.layout import RunPaths
from roller.capture.reader import dump_json
from roller.capture.summary_record import RunSummary, SampleStatus, SampleSummary
from roller.collect.executor import Executor, LocalExecutor
from roller.collect.failure import AttemptFailed, record_failure
from roller.collect.lost import AttemptLost, record_lost
from roller.collect.preparation import Prepared, RunRequest, prepare, write_run
from roller.collect.runs import now_rfc3339
from roller.collect.session import AttemptDone, AttemptJob
from roller.collect.tasks import Task
from roller.collect.verdicts import AttemptVerdict, SampleVerdict, judge_attempt

__all__ = [  # RunRequest, what to collect, is declared with the preparation that reads it
    "LOST_RETRIES",
    "Progress",
    "RunEvent",
    "RunRequest",
    "RunResult",
    "SampleResult",
    "collect_run",
    "summarize",
]

# Lost attempts (the runner's worker or node died) made good per sample per invocation;
# they use none of `--attempts` (the harness did not decide them).
LOST_RETRIES = 3


@dataclass(frozen=True)
class Progress:
    total: int
    reused: int
    succeeded: int  # finished in this invocation or reused, latest attempt succeeded
    failed: int  # finished without success (budget used, or stopped)
    running: int
    waiting: int
    calls: int  # model calls captured by this invocation so far
    elapsed_s: float
    eta_s: float | None


@dataclass(frozen=True)
class RunEvent:
    progress: Progress
    line: str | None = None  # something worth one plain line (a sample's news)
    sample_id: str | None = None
    status: str | None = None  # what that sample's running attempt is doing


@dataclass(frozen=True)
class SampleResult:
    task: Task
    verdict: SampleVerdict
    status: SampleStatus
    reused: bool
    last: AttemptDone | None  # the last attempt this invocation collected


@dataclass(frozen=True)
class RunResult:
    run: RunPaths
    samples: tuple[SampleResult, ...]
    summary: RunSummary
    stopped: bool


class _Board:
    """The run's counters while it runs (in flight only; events carry frozen copies)."""

    def __init__(self, total: int) -> None:
        self.total, self.started = total, time.monotonic()
        self.reused = self.succeeded = self.failed = self.finished_now = 0
        self.calls_done = 0
        self.live: dict[str, int] = {}  # sample id -> calls of its running attempt

    def snapshot(self) -> Progress:
        elapsed = time.monotonic() - self.started
        running = len(self.live)
        waiting = self.total - self.succeeded - self.failed - running
        eta = elapsed / self.finished_now * (waiting + running) if self.finished_now else None
        return Progress(
            self.total, self.reused, self.succeeded, self.failed, running, waiting,
            self.calls_done + sum(self.live.values()), elapsed, eta,
        )  # fmt: skip


def _describe(verdict: AttemptVerdict) -> str:
    m = verdict.manifest
    name = verdict.attempt.root.name
    if verdict.outcome == "invalid":
        first = verdict.problems[0] if verdict.problems else "invalid"
        more = f" (+{len(verdict.problems) - 1} more)" if len(verdict.problems) > 1 else ""
        return f"{name} invalid: {first}{more}; kept, not reused"
    assert m is not None
    text = (
        f"{name} {verdict.outcome} (execution {m.execution_status}, capture "
        f"{m.capture_status}, {m.counts.calls} calls, {m.counts.exportable_calls} exportable)"
    )
    if verdict.lost:
        text += f"; lost: {verdict.lost}"
    return ("recovered from raw/: " if verdict.recovered else "") + text


class _Scheduler:
    """One invocation's samples: reuse the finished, give the others attempts."""

    def __init__(
        self,
        prepared: Prepared,
        request: RunRequest,
        on_event: Callable[[RunEvent], None],
        stop: asyncio.Event | None,
        executor: Executor,
    ) -> None:
        self.prepared, self.request, self.on_event = prepared, request, on_event
        self.stop, self.executor = stop, executor
        self.board = _Board(len(prepared.tasks))
        self.budget = max(1, prepared.spec.attempts)

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def emit(
        self, line: str | None = None, sample: str | None = None, status: str | None = None
    ) -> None:
        self.on_event(RunEvent(self.board.snapshot(), line, sample, status))

    async def sample(self, task: Task, verdict: SampleVerdict) -> SampleResult:
        for judged in verdict.attempts:
            if judged.outcome == "invalid" or judged.recovered:
                self.emit(f"{task.id}: {_describe(judged)}", task.id)
        latest = verdict.latest
        if latest is None or not verdict.finished(self.budget):
            return await self._collect(task, verdict)
        ok = latest.outcome == "succeeded"
        self.board.reused += 1
        self.board.succeeded += ok
        self.board.failed += not ok
        self.emit(f"{task.id}: reused {_describe(latest)}", task.id)
        return SampleResult(task, verdict, "succeeded" if ok else "failed", True, None)

    def _job(self, task: Task) -> AttemptJob:
        run = self.prepared.run
        return AttemptJob(
            task=task,
            attempt=run.sample(task.id).next_attempt(),
            spec=self.prepared.spec,
            install_dir=self.prepared.install_dir,
            files=run.task_files(task.id) if task.files is not None else None,
            keep_scratch=self.request.keep_scratch,
        )

    async def _attempt(
        self, task: Task
    ) -> tuple[AttemptDone | AttemptLost | AttemptFailed | None, AttemptVerdict | None]:
        """One attempt from the executor, judged; a lost one is recorded first, and so
        is one roller itself failed on (a bug: the run goes on, the attempt is kept)."""

        def report(text: str, calls: int) -> None:
            self.board.live[task.id] = calls
            self.emit(None, task.id, text)

        job = self._job(task)
        done: AttemptDone | AttemptLost | AttemptFailed | None
        try:
            done = await self.executor.run(job, report, self.stop)
        except Exception as exc:  # noqa: BLE001 (the boundary: recorded, never raised)
            done = record_failure(job, exc)
            self.emit(
                f"{task.id}: roller failed on {job.attempt.root.name}: {done.reason}", task.id
            )
        self.board.calls_done += self.board.live.pop(task.id, 0)
        if done is None:
            return None, None
        if isinstance(done, AttemptLost):
            return done, judge_attempt(record_lost(job, done), collected_now=True)
        if isinstance(done, AttemptFailed):
            return done, judge_attempt(job.attempt, collected_now=True)
        return done, judge_attempt(done.attempt, collected_now=True)

    async def _collect(self, task: Task, verdict: SampleVerdict) -> SampleResult:
        """Attempts until one succeeds or the budget is used (at least one). A lost
        attempt (its runner died) uses none of the budget, but at most LOST_RETRIES of
        them are made good in one invocation, so a failing cluster still ends the run."""
        last: AttemptDone | None = None
        tries = max(self.budget - verdict.used(), 1)
        n = lost = 0
        while n < tries and not self.stopped:
            done, judged = await self._attempt(task)
            if judged is None:
                break
            verdict = verdict.with_attempt(judged)
            if isinstance(done, AttemptLost):
                lost += 1
                if lost > LOST_RETRIES or self.stopped:
                    break
                self.emit(f"{task.id}: {_describe(judged)}; a new attempt", task.id)
                continue
            n, last = n + 1, done if isinstance(done, AttemptDone) else last
            if judged.outcome == "succeeded" or n == tries or self.stopped:
                break
            self.emit(f"{task.id}: {_describe(judged)}; another attempt ({n + 1}/{tries})", task.id)
        latest = verdict.latest
        status: SampleStatus = "not_run" if latest is None else (
            "succeeded" if latest.outcome == "succeeded" else "failed"
        )  # fmt: skip
        ran = n + lost > 0
        self.board.finished_now += ran
        self.board.succeeded += status == "succeeded"
        self.board.failed += status == "failed"
        news = f"{task.id}: {_describe(latest)}" if ran and latest else None
        self.emit(news, task.id)
        return SampleResult(task, verdict, status, False, last)

    async def run(self) -> RunResult:
        prepared = self.prepared
        self.emit(f"{len(prepared.tasks)} sample(s), up to {self.budget} attempt(s) each")
        results = await asyncio.gather(
            *(self.sample(t, v) for t, v in zip(prepared.tasks, prepared.verdicts, strict=True))
        )
        elapsed = self.board.snapshot().elapsed_s
        summary = summarize(prepared.spec.harness, results, self.stopped, elapsed)
        atomic_write(prepared.run.summary, dump_json(summary))
        self.emit()
        return RunResult(prepared.run, tuple(results), summary, self.stopped)


async def collect_run(
    request: RunRequest,
    on_event: Callable[[RunEvent], None] = lambda _e: None,
    stop: asyncio.Event | None = None,
    executor: Executor | None = None,
) -> RunResult:
    """Collect every task of the run that is not finished; see the module docstring."""

    def log(text: str) -> None:
        on_event(RunEvent(_Board(0).snapshot(), text))

    prepared = prepare(request, log)
    write_run(prepared, request)
    return await _Scheduler(prepared, request, on_event, stop, executor or LocalExecutor(1)).run()


def summarize(
    harness: str, results: Sequence[SampleResult], stopped: bool, elapsed_s: float
) -> RunSummary:
    samples = []
    for r in results:
        attempts = [a.summary() for a in r.verdict.attempts]
        latest = attempts[-1] if attempts else None
        samples.append(
            SampleSummary(
                sample_id=r.task.id,
                status=r.status,
                reused=r.reused,
                attempts=attempts,
                execution_status=latest.execution_status if latest else None,
                capture_status=latest.capture_status if latest else None,
                calls=latest.calls if latest else 0,
                exportable_calls=latest.exportable_calls if latest else 0,
                wall_s=round(sum(a.wall_s or 0.0 for a in attempts), 3),
            )
        )
    return RunSummary(
        schema_="roller.summary/v1",
        written_at=now_rfc3339(),
        harness=harness,
        stopped=stopped,
        elapsed_s=round(elapsed_s, 3),
        samples_total=len(samples),
        succeeded=sum(1 for s in samples if s.status == "succeeded"),
        failed=sum(1 for s in samples if s.status == "failed"),
        not_run=sum(1 for s in samples if s.status == "not_run"),
        reused=sum(1 for s in samples if s.reused),
        calls=sum(s.calls for s in samples),
        exportable_calls=sum(s.exportable_calls for s in samples),
        samples=samples,
    )

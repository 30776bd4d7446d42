"""The Ray executor (`roller collect --executor ray`): each attempt is a Ray task that
runs the same sample runner as the local executor (`roller.collect.session.run_attempt`:
proxy, mock, harness, finalize) on whichever node Ray picks.

Flow of one attempt (docs/scale.md):
1. the driver submits `_run_on_node(RemoteJob)` with `num_cpus=--cpus-per-sample` and
   `max_retries=0` — a retry is the driver's decision, as a new attempt, never Ray's
   silent re-run of the same one;
2. on the node, the harness is installed once into that node's roller cache
   (`install_once`: concurrent samples wait on a file lock), and the attempt runs in a
   node-local scratch directory laid out like the run directory (the task's files come
   along as an archive);
3. the finished attempt comes back as an archive (`roller.collect.attempt_archive`)
   through Ray's object store; the driver unpacks it at the attempt directory it chose
   and returns it, and the run driver judges it like any other. With
   `--shared-run-dir` the node writes the run directory itself and nothing is copied;
4. what the attempt is doing (and its model calls so far) goes to a small actor on the
   driver's node, which the driver polls for the progress display;
5. a worker or node that dies (WorkerCrashedError, NodeDiedError, …), or any other
   failure of the task, is returned as `AttemptLost` with the reason: the run driver
   records it as an interrupted attempt and gives the sample a new one;
6. Ctrl-C (`stop`): the same actor says the run is stopping, which each running
   attempt asks every `STOP_POLL_S` and then ends its harness, publishes what it captured
   (interrupted) and comes back, as a local attempt does; the driver gives it
   `STOP_GRACE_S`, then cancels it as it cancels the tasks still queued in Ray.

Facts relied on: a Ray task's return value is stored in the object store of the node
that ran it and fetched by the driver (no shared filesystem); a task whose node dies
raises on the driver when awaited; `ray.cancel(force=True)` kills the worker process,
and the harness supervisor kills the harness when its parent dies
(`roller.collect.supervisor`); a task blocked in `ray.get` lends its CPUs back to the
node (Ray 2.60; seen here: a second sample started on a one-CPU node), an awaited
object reference does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from roller.capture.layout import AttemptPaths, RunPaths, SamplePaths
from roller.capture.reader import read_manifest
from roller.collect.attempt_archive import pack_attempt, pack_dir, unpack_attempt, unpack_dir
from roller.collect.executor import ExecutorChoice
from roller.collect.launcher import LaunchResult
from roller.collect.lost import AttemptLost
from roller.collect.runs import now_rfc3339
from roller.collect.session import AttemptDone, AttemptJob, Report, run_attempt
from roller.collect.turns import TurnResult
from roller.errors import RollerError
from roller.export.trajectory_file import read_trajectory
from roller.harnesses import adapter_for
from roller.harnesses.install import install_once

# Ray's own phoning home and dashboard stay off unless the user set them otherwise.
QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}
POLL_S = 0.25
# How often a running attempt asks whether the run is stopping: one actor call a second
# per running attempt, so a large cluster's hundreds stay cheap for the actor.
STOP_POLL_S = 1.0
STOP_GRACE_S = 60.0  # a stopped attempt's time to end its harness, publish and come back
RUNNING_ON = "running on node "  # the first report of every attempt, then the node's id


@dataclass(frozen=True)
class RemoteJob:
    job: AttemptJob
    key: str  # the driver's name for this attempt, for its reports
    files: bytes | None  # the task's files folder, packed (None: none, or shared)
    shared: bool  # the node writes the run directory itself


@dataclass(frozen=True)
class RemoteDone:
    node: str
    archive: bytes | None  # None when the run directory is shared
    launch: LaunchResult
    turns: tuple[TurnResult, ...]
    scratch: str | None  # kept on the node (`--keep-scratch`)


@ray.remote(num_cpus=0)
class _Reports:
    """What running attempts report, until the driver takes it; and whether the run is
    stopping (Ctrl-C), which each running attempt asks every `STOP_POLL_S`."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, int]] = []
        self.stopping = False

    def put(self, key: str, text: str, calls: int) -> None:
        self.items.append((key, text, calls))

    def take(self) -> list[tuple[str, str, int]]:
        items, self.items = self.items, []
        return items

    def stop(self) -> None:
        self.stopping = True

    def stopped(self) -> bool:
        return self.stopping


def _node_job(remote: RemoteJob, root: Path, log: Report) -> AttemptJob:
    """The job as it runs on this node: node-local paths unless the run dir is shared."""
    job = remote.job
    install_dir = job.install_dir
    adapter = adapter_for(job.spec.harness)
    if adapter.pin.registry != "none":
        log(f"installing {adapter.name} on this node…", 0)
        install_dir = install_once(adapter, job.spec.harness_version).root
    if remote.shared:
        return replace(job, install_dir=install_dir)
    run = RunPaths(root / "run")
    attempt = run.sample(job.task.id).attempt(job.attempt.attempt_number)
    files = None
    if remote.files is not None:
        files = run.task_files(job.task.id)
        unpack_dir(remote.files, files)
    return replace(job, attempt=attempt, install_dir=install_dir, files=files)


def run_on_node(remote: RemoteJob, reports: Any) -> RemoteDone:
    """The Ray task's body (also callable in-process, for tests)."""
    node = ray.get_runtime_context().get_node_id()

    def report(text: str, calls: int) -> None:
        reports.put.remote(remote.key, text, calls)

    report(f"{RUNNING_ON}{node}", 0)
    root = Path(tempfile.mkdtemp(prefix="roller-ray-"))
    try:
        job = _node_job(remote, root, report)
        done = asyncio.run(_run_until_stopped(job, report, reports))
        archive = None if remote.shared else pack_attempt(done.attempt)
        scratch = str(done.scratch) if done.scratch is not None else None
        return RemoteDone(node, archive, done.launch, _relative(done.turns, done.attempt), scratch)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _run_until_stopped(job: AttemptJob, report: Report, reports: Any) -> AttemptDone:
    """`run_attempt`, its `stop` set once the driver says the run is stopping: the
    attempt then ends its harness and is published as interrupted with what it
    captured, as a local one is."""
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch(reports, stop))
    try:
        return await run_attempt(job, report, stop)
    finally:
        watcher.cancel()


async def _watch(reports: Any, stop: asyncio.Event) -> None:
    # Awaited, not `ray.get`: a task blocked in `ray.get` lends its CPUs back to Ray,
    # which may start another sample on the node meanwhile (seen: two samples on a
    # one-CPU node).
    try:
        while not await reports.stopped.remote():
            await asyncio.sleep(STOP_POLL_S)
    except ray.exceptions.RayError:
        return  # the driver's actor is gone: the attempt runs to its end
    stop.set()


_run_on_node = ray.remote(run_on_node)


def _relative(turns: tuple[TurnResult, ...], attempt: AttemptPaths) -> tuple[TurnResult, ...]:
    """Each turn's output dir relative to its attempt (the node's paths mean nothing to
    the driver); `_rebased` puts them under the driver's attempt."""
    return tuple(
        replace(t, output_dir=t.output_dir.relative_to(attempt.root))
        if t.output_dir.is_relative_to(attempt.root)
        else t
        for t in turns
    )


def _rebased(turns: tuple[TurnResult, ...], attempt: AttemptPaths) -> tuple[TurnResult, ...]:
    return tuple(replace(t, output_dir=attempt.root / t.output_dir) for t in turns)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = exc.cause
        return f"the sample runner failed: {type(cause).__name__}: {cause}".splitlines()[0]
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else 'no detail'}"[:500]


class RayExecutor:
    """Attempts as Ray tasks; at most `--concurrency` in flight when given, else as many
    as the cluster's CPUs allow (Ray queues the rest)."""

    def __init__(self, choice: ExecutorChoice) -> None:
        self.choice = choice
        self._slots: asyncio.Semaphore | None = None
        self._reports: Any = None
        self._reporters: dict[str, Report] = {}
        self._where: dict[str, str] = {}  # the node each running attempt reported
        self._poller: asyncio.Task[None] | None = None
        self._started_ray = False

    def _connect(self) -> None:
        for key, value in QUIET_ENV.items():
            os.environ.setdefault(key, value)
        if not ray.is_initialized():
            ray.init(
                address=self.choice.ray_address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
            self._started_ray = True
        if self._reports is None:
            here = ray.get_runtime_context().get_node_id()
            strategy = NodeAffinitySchedulingStrategy(node_id=here, soft=True)
            actor: Any = _Reports  # ray.remote keeps the class type for mypy
            self._reports = actor.options(scheduling_strategy=strategy).remote()

    async def _poll(self) -> None:
        try:
            while self._reporters:
                await self._take()
                await asyncio.sleep(POLL_S)
        except ray.exceptions.RayError:
            pass  # the progress actor is gone: the samples run on, unreported
        finally:
            self._poller = None

    async def _take(self) -> None:
        """What the attempts reported since the last time, to their reporters."""
        for key, text, calls in await self._reports.take.remote():
            reporter = self._reporters.get(key)  # gone: that attempt has returned
            if reporter is None:
                continue
            if text.startswith(RUNNING_ON):
                self._where[key] = text.removeprefix(RUNNING_ON)
            reporter(text, calls)

    async def run(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | AttemptLost | None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.choice.concurrency or 1_000_000)
        async with self._slots:
            if stop is not None and stop.is_set():
                return None
            self._connect()
            key = str(job.attempt.root)
            self._reporters[key] = report
            if self._poller is None:
                self._poller = asyncio.create_task(self._poll())
            try:
                return await self._submit(job, report, stop)
            finally:
                del self._reporters[key]
                self._where.pop(key, None)

    async def _submit(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | AttemptLost | None:
        shared = self.choice.shared_run_dir
        files = pack_dir(job.files) if job.files is not None and not shared else None
        started = now_rfc3339()
        report("waiting for a Ray worker", 0)
        ref = _run_on_node.options(
            num_cpus=self.choice.cpus_per_sample, max_retries=0, retry_exceptions=False
        ).remote(RemoteJob(job, str(job.attempt.root), files, shared), self._reports)
        waiter = asyncio.ensure_future(ref)
        stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
        try:
            await asyncio.wait(
                {waiter, *([stopping] if stopping else [])}, return_when="FIRST_COMPLETED"
            )
            if not waiter.done():
                await self._stopped(ref, waiter, key=str(job.attempt.root))
            remote: RemoteDone = await waiter
        except ray.exceptions.RayError as exc:
            where = self._where.get(str(job.attempt.root))
            if stop is None or not stop.is_set():
                return AttemptLost(_reason(exc), where, started)
            # stopped: a task still queued in Ray never started (as a local sample
            # waiting for its slot); one that ran is recorded as interrupted
            return None if where is None else AttemptLost("stopped (Ctrl-C)", where, started)
        finally:
            if stopping is not None:
                stopping.cancel()
        return self._arrived(job, remote, report)

    async def _stopped(self, ref: Any, waiter: asyncio.Future[Any], key: str) -> None:
        """The run is stopping. The actor says so, so no attempt begins from now on
        (`run_on_node`); a running attempt (it reported so, the reports taken after
        the flag) ends its harness and sends back what it captured, published, as a
        local attempt does, within `STOP_GRACE_S`. One still queued in Ray, or not
        ended in time, is cancelled: its worker killed, the harness with it."""
        with contextlib.suppress(ray.exceptions.RayError):  # no actor: cancelled below
            await self._reports.stop.remote()
            await self._take()
            if key in self._where:
                await asyncio.wait({waiter}, timeout=STOP_GRACE_S)
        if not waiter.done():
            ray.cancel(ref, force=True)

    def _arrived(
        self, job: AttemptJob, remote: RemoteDone, report: Report
    ) -> AttemptDone | AttemptLost:
        attempt = job.attempt
        try:
            if remote.archive is not None:
                unpack_attempt(remote.archive, attempt)
            manifest = read_manifest(attempt)
            sample = SamplePaths(attempt.root.parent.parent)
            trajectory = read_trajectory(sample.trajectory_file(attempt.attempt_number))
        except (RollerError, OSError) as exc:
            why = f"its archive from node {remote.node} is unusable: {exc}"
            return AttemptLost(why, remote.node)
        report(f"finished on node {remote.node}", manifest.counts.calls)
        scratch = Path(remote.scratch) if remote.scratch else None
        turns = _rebased(remote.turns, attempt)
        return AttemptDone(attempt, manifest, remote.launch, scratch, trajectory, turns)

    def close(self) -> None:
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        self._started_ray, self._reports = False, None

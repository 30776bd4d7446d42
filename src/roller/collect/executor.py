"""Executors: where and how many sample attempts run at once.

An executor only runs attempts: it is handed one `AttemptJob` at a time by the run
driver (`roller.collect.collection`), which alone decides what to collect, what to
reuse, what to refuse and when to retry, records a lost attempt (`roller.collect.lost`)
and judges every attempt it gets back. So an executor that runs attempts elsewhere
implements `run` (and `close`) and nothing else; `run_attempt` is a function of the job
alone.

`run` returns the published attempt (`AttemptDone`, its directory inside the run
directory), `AttemptLost` when the runner died where the driver cannot finish it (the
driver records it as interrupted and gives the sample a new attempt), or None when
`stop` was set before the attempt started.

- `LocalExecutor(concurrency)`: attempts run in this process's event loop, at most
  `concurrency` at a time (`--concurrency`); each is its own proxy, mock and harness
  process tree (`roller.collect.session`), so they share nothing but the CPU. It never
  loses an attempt: if this process dies, so does the driver, and `--resume` recovers.
- `RayExecutor` (`roller.collect.ray_executor`, `--executor ray`, needs the `ray`
  extra): each attempt is a Ray task running the same `run_attempt` on a cluster node.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, Protocol

from roller.collect.lost import AttemptLost
from roller.collect.session import AttemptDone, AttemptJob, Report, run_attempt
from roller.errors import UsageError

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("local", "ray")
RAY_MISSING = (
    "--executor ray needs Ray, which is an optional extra: pip install 'roller[ray]' "
    "(on the driver and on every node of the cluster; docs/scale.md)"
)


class Executor(Protocol):
    async def run(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | AttemptLost | None:
        """Run the attempt to its published capture, or return None without starting it
        when `stop` was set while it waited for its turn."""
        ...

    def close(self) -> None:
        """Release what the executor holds (a cluster connection); idempotent."""
        ...


class LocalExecutor:
    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self._slots: asyncio.Semaphore | None = None

    async def run(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | None:
        if self._slots is None:  # bound to the running loop on first use
            self._slots = asyncio.Semaphore(self.concurrency)
        async with self._slots:
            if stop is not None and stop.is_set():
                return None
            return await run_attempt(job, report, stop)

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class ExecutorChoice:
    """`--executor` and the flags that go with it."""

    name: ExecutorName = "local"
    concurrency: int | None = None  # local: 1; ray: as many as the cluster's CPUs allow
    ray_address: str | None = None  # `auto`, `ray://HOST:PORT`, or None: a local Ray
    cpus_per_sample: float = 1.0
    shared_run_dir: bool = False


def make_executor(choice: ExecutorChoice) -> Executor:
    """The executor asked for; `--executor ray` without Ray installed says how to get it."""
    if choice.name == "local":
        if choice.ray_address is not None or choice.shared_run_dir:
            raise UsageError("--ray-address and --shared-run-dir go with --executor ray")
        return LocalExecutor(choice.concurrency or 1)
    try:
        from roller.collect.ray_executor import RayExecutor
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "ray":
            raise UsageError(RAY_MISSING) from exc
        raise
    return RayExecutor(choice)

"""Executors: where and how many sample attempts run at once.

An executor only runs attempts: it is handed one `AttemptJob` at a time by the run
driver (`roller.collect.collection`), which alone decides what to collect, what to
reuse, what to refuse and when to retry, and judges every attempt it gets back. So an
executor that runs attempts elsewhere (issue 13: Ray workers sharing the run directory)
implements `run` and nothing else; `run_attempt` is a function of the job alone.

`LocalExecutor(concurrency)`: attempts run in this process's event loop, at most
`concurrency` at a time (`--concurrency`); each is its own proxy, mock and harness
process tree (`roller.collect.session`), so they share nothing but the CPU.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from roller.collect.session import AttemptDone, AttemptJob, Report, run_attempt


class Executor(Protocol):
    async def run(
        self, job: AttemptJob, report: Report, stop: asyncio.Event | None
    ) -> AttemptDone | None:
        """Run the attempt to its published capture, or return None without starting it
        when `stop` was set while it waited for its turn."""
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

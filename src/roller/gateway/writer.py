"""The background writer: call rows and session touches, batched, off the request path.

`StoreWriter(store)`; `writer.submit(row)` queues a call row (a bound `CallRow`) and
returns at once (the gateway's end hook: no task, no future per row); `await
writer.record(row)` queues one and returns once the batch holding it committed (or
raises the `StoreError` that cost it); `lost(exchange_id, error)` counts and reports a
row that could not even be made; `touch(session_id, when)` queues a `last_seen_at` write
and returns at once (the batch reads the session's parent back and hands it to
`on_parents`); `await flush()` waits until everything queued so far is written; `await
close()` drains the queue and stops. Rules kept:
- One batch is one transaction (`SessionStore.write_batch`: one `executemany`, or on
  PostgreSQL one statement over the rows as a JSON document), for SQLite and PostgreSQL
  alike: the first item waits `linger` seconds for others to join
  it (at most `max_batch` rows), so a busy gateway pays one transaction per batch, not
  per request. A request never waits on it: the proxy runs the end hook that submits
  the row after the client has its response, and touches are not awaited.
- A failing batch is retried (`ROW_ATTEMPTS`, with backoff); when it still fails and holds
  several rows, each row is tried alone, so one unstorable row cannot cost the others.
  A row that cannot be written fails its `record`, or is handed to `on_failure(exchange
  id, error)` when it was submitted (the gateway notes it on the exchange's tape
  record), and is counted in `failed`; a touch that cannot be written is logged only
  (the next one carries a later time).
- Durability comes from the tape, not from this queue: rows queued when the process dies
  are written on the next start by `roller.gateway.recovery`, from the tape alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Final

from roller.gateway.store import CallRow, SessionStore, StoreError

log = logging.getLogger("roller.gateway")

ROW_ATTEMPTS: Final = 3  # writes of a batch before its failure is raised
_BACKOFF_S: Final = (0.05, 0.25)
LINGER_S: Final = 0.05
MAX_BATCH: Final = 500


# A queued row, and the future of its `record` (None: submitted, failures go to
# `on_failure`).
_Pending = tuple[CallRow, "asyncio.Future[None] | None"]
OnFailure = Callable[[str, BaseException], None]


class StoreWriter:
    def __init__(
        self,
        store: SessionStore,
        *,
        linger: float = LINGER_S,
        max_batch: int = MAX_BATCH,
        on_failure: OnFailure = lambda _id, _exc: None,
    ) -> None:
        self.store = store
        self.on_failure = on_failure
        # Told each touched session's parent once its touch committed (the resolutions).
        self.on_parents: Callable[[Mapping[str, str | None]], None] = lambda _parents: None
        self.linger = linger
        self.max_batch = max_batch
        self.failed = 0  # call rows not written
        self.batches = 0  # transactions committed
        self._calls: list[_Pending] = []
        self._touches: dict[str, datetime] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._writing = 0  # rows taken from the queue, not settled yet
        self._flushed: list[asyncio.Future[None]] = []  # `flush` callers waiting

    def submit(self, row: CallRow) -> None:
        self._calls.append((row, None))
        self._kick()

    async def record(self, row: CallRow) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._calls.append((row, done))
        self._kick()
        await done

    def lost(self, exchange_id: str, error: BaseException) -> None:
        """A row that could not be made (so never queued): counted as not written, so
        the run mark stays and the next start writes it from the tape, and reported."""
        self.failed += 1
        self.on_failure(exchange_id, error)

    async def flush(self) -> None:
        """Wait until every row and touch queued so far is written (or its failure
        settled)."""
        if not (self._calls or self._touches or self._writing):
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushed.append(done)
        self._kick()
        await done

    def touch(self, session_id: str, when: datetime) -> None:
        if self._touches.get(session_id, when) <= when:
            self._touches[session_id] = when
        self._kick()

    async def close(self) -> None:
        """Write everything queued, then stop."""
        self._closing = True
        if self._task is not None:
            assert self._wake is not None
            self._wake.set()
            await self._task
            self._task = None

    def _kick(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        assert self._wake is not None
        self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            if not self._closing and len(self._calls) < self.max_batch:
                await asyncio.sleep(self.linger)  # let a batch gather
            self._wake.clear()
            calls, self._calls = self._calls[: self.max_batch], self._calls[self.max_batch :]
            touches, self._touches = self._touches, {}
            if calls or touches:
                self._writing = len(calls)
                try:
                    await self._write(calls, touches)
                finally:
                    self._writing = 0
            if self._calls or self._touches:
                self._wake.set()
                continue
            flushed, self._flushed = self._flushed, []
            for waiter in flushed:
                if not waiter.done():
                    waiter.set_result(None)
            if self._closing:
                return

    async def _write(self, calls: Sequence[_Pending], touches: Mapping[str, datetime]) -> None:
        failure = await self._attempt([row for row, _ in calls], touches, ROW_ATTEMPTS)
        if failure is None:
            self._settle(calls, None)
            return
        if touches:
            log.error("session touches not written: %s", failure)
        if len(calls) <= 1:
            self._settle(calls, failure)
            return
        for pending in calls:  # isolate the row that cannot be stored
            self._settle([pending], await self._attempt([pending[0]], {}, 1))

    async def _attempt(
        self, calls: list[CallRow], touches: Mapping[str, datetime], attempts: int
    ) -> StoreError | None:
        failure: StoreError | None = None
        for attempt in range(attempts):
            try:
                parents = await self.store.run(self.store.write_batch, calls, touches)
                self.batches += 1
                if parents:
                    self.on_parents(parents)
                return None
            except StoreError as exc:
                failure = exc
                if attempt + 1 < attempts:
                    await asyncio.sleep(_BACKOFF_S[attempt])
        return StoreError(f"call row not recorded after {attempts} attempts: {failure}")

    def _settle(self, calls: Sequence[_Pending], failure: StoreError | None) -> None:
        if failure is not None:
            self.failed += len(calls)
        for row, done in calls:
            if done is None:
                if failure is not None:
                    self.on_failure(row.exchange_id, failure)
            elif done.done():
                continue  # its caller was cancelled
            elif failure is None:
                done.set_result(None)
            else:
                done.set_exception(failure)

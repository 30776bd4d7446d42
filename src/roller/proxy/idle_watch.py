"""The upstream's idle read timeout of every exchange of one proxy, on one shared timer.

aiohttp's own `sock_read` timeout re-arms a loop timer on every read from the upstream (a
`TimerHandle`, a heap push and a cancel per chunk: on streams, one per event, the largest
single item of the proxy's extra CPU per stream measured against a bare hop); one timer
per exchange still cost a `TimerHandle`, its heap push (Python `__lt__` calls) and its
cancelled entry's pop, per exchange. Here each exchange only marks its waits for the
upstream on its `IdleWatch`: `since` is the loop time the wait in progress began (the
response head, then each read), None while the proxy is busy elsewhere (relaying to the
client is no upstream silence); opening and stopping a watch is a dict insert and pop.
One timer for the whole proxy (`IdleWatches`) ticks every `tick` seconds while any watch
is open (the timeout's eighth, at most a second) and cancels the task of every exchange
whose wait in progress lasted the whole timeout (`expired`); the exchange turns that
cancellation into the upstream timeout (`timed_out`), as aiohttp's `TimeoutError` was.
So a silent upstream is noticed after the timeout and at most one tick later, never
before.

Facts it relies on: a task is only cancelled at an await, and `Task.uncancel()` (Python
3.11) says whether any other cancellation (the client gone, the proxy stopping) is also
pending, so one of those is never mistaken for a timeout, nor swallowed by it.
"""

from __future__ import annotations

import asyncio
from typing import Final

TICKS_PER_TIMEOUT: Final = 8  # how late a timeout may fire, as a share of it
MAX_TICK: Final = 1.0  # seconds, whatever the timeout


class IdleWatches:
    """The read timeouts of one proxy's exchanges (`timeout` None: never time out).
    Create it inside the running event loop."""

    __slots__ = ("_handle", "_open", "loop", "tick", "time", "timeout")

    def __init__(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.time = loop.time  # the clock `since` is read on
        self.timeout = timeout
        self.tick = None if timeout is None else min(timeout / TICKS_PER_TIMEOUT, MAX_TICK)
        self._open: dict[IdleWatch, None] = {}  # insertion-ordered; a set's hashing, no more
        self._handle: asyncio.TimerHandle | None = None

    def watch(self) -> IdleWatch:
        """A watch for the current task, waiting from now (for the response head)."""
        watch = IdleWatch(self)
        if self.tick is not None:
            self._open[watch] = None
            if self._handle is None:
                self._handle = self.loop.call_at(self.loop.time() + self.tick, self._check)
        return watch

    def stop(self, watch: IdleWatch) -> None:
        # The timer is left to run out on its next tick: cancelling it whenever the last
        # watch closes would cost a TimerHandle per exchange again at concurrency 1.
        self._open.pop(watch, None)

    def _check(self) -> None:
        assert self.timeout is not None and self.tick is not None
        self._handle = None
        now, timeout = self.loop.time(), self.timeout
        for watch in [w for w in self._open if w.since is not None and now - w.since >= timeout]:
            del self._open[watch]
            task = watch.task
            if task is not None and not task.done():
                watch.expired = True
                task.cancel()
        if self._open:
            self._handle = self.loop.call_at(now + self.tick, self._check)


class IdleWatch:
    """The read timeout of one exchange, kept by its proxy's `IdleWatches`."""

    __slots__ = ("_watches", "expired", "since", "task", "time")

    def __init__(self, watches: IdleWatches) -> None:
        self._watches = watches
        self.time = watches.time
        self.task = asyncio.current_task(watches.loop)  # given: no getpid (3.11 checks it)
        self.expired = False
        self.since: float | None = watches.time()  # waiting from the start: for the head

    def stop(self) -> None:
        """The exchange is done with the upstream: it is watched no longer."""
        self._watches.stop(self)

    def timed_out(self) -> bool:
        """Whether the `CancelledError` being handled is this watch's own and nothing
        else's: then it is taken back, and the caller reports the timeout instead."""
        if not self.expired or self.task is None:
            return False
        self.expired = False  # taken back once
        return self.task.uncancel() == 0

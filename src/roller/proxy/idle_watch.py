"""The upstream's idle read timeout of one exchange, on one timer.

aiohttp's own `sock_read` timeout re-arms a loop timer on every read from the upstream (a
`TimerHandle`, a heap push and a cancel per chunk: on streams, one per event, the largest
single item of the proxy's extra CPU per stream measured against a bare hop). Here the
exchange marks the waits for the upstream itself: `since` is the loop time the wait in
progress began (the response head, then each read), None while the proxy is busy
elsewhere (relaying to the client is no upstream silence). One timer, armed for the
whole timeout, re-arms itself for what is left of the wait in progress and, once one
wait lasted the whole timeout, cancels the exchange's task (`expired`); the exchange
turns that cancellation into the upstream timeout (`timed_out`), as aiohttp's
`TimeoutError` was before.

Facts it relies on: a task is only cancelled at an await, and `Task.uncancel()` (Python
3.11) says whether any other cancellation (the client gone, the proxy stopping) is also
pending, so one of those is never mistaken for a timeout, nor swallowed by it.
"""

from __future__ import annotations

import asyncio


class IdleWatch:
    """The read timeout of one exchange (`timeout` None: never times out)."""

    __slots__ = ("_handle", "_loop", "_task", "_timeout", "expired", "since", "time")

    def __init__(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.time = loop.time  # the clock `since` is read on
        self._timeout = timeout
        self._task = asyncio.current_task()
        self.expired = False
        self.since: float | None = loop.time()  # waiting from the start: for the head
        self._handle: asyncio.TimerHandle | None = None
        if timeout is not None:
            self._handle = loop.call_at(self.since + timeout, self._check)

    def stop(self) -> None:
        """The exchange is done with the upstream: no timer left behind."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def timed_out(self) -> bool:
        """Whether the `CancelledError` being handled is this watch's own and nothing
        else's: then it is taken back, and the caller reports the timeout instead."""
        if not self.expired or self._task is None:
            return False
        self.expired = False  # taken back once
        return self._task.uncancel() == 0

    def _check(self) -> None:
        assert self._timeout is not None
        self._handle = None
        since, now = self.since, self._loop.time()
        due = now + self._timeout if since is None else since + self._timeout
        if since is not None and now >= due:
            if self._task is not None and not self._task.done():
                self.expired = True
                self._task.cancel()
            return
        self._handle = self._loop.call_at(due, self._check)

"""The proxy's request handler: one `Exchange` per request, plus in-flight bookkeeping.

The relay is built with the application (the route's handler is `handler()`: the
exchange's own coroutine, bound to this relay, no coroutine level in between) and opened
when the application starts, once the tape and the upstream client exist; every exchange
gets the same frozen `ExchangeServices` (built once, at `open`), which count it in flight
here; `exchange` does not import this module. Rules this module keeps:
- `in_flight` counts requests being handled; `wait_idle` waits until none is. The end
  hook is a plain call inside the exchange (`policy.ExchangeEndHook`), so an exchange no
  longer in flight has had its hook's effect.
- A hook that fails is counted, logged (without its message: `server_log`) and written on
  its exchange's tape record as the annotation `end_hook_error` (an `ann` frame after the
  `end`), so the failure is part of the exchange's record, not only a log line; so is a
  failure of work the hook handed on (`note_hook_error`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from roller.capture.tape import TapeWriter
from roller.proxy.exchange import Exchange
from roller.proxy.header_plan import HeaderPlans
from roller.proxy.idle_watch import IdleWatches
from roller.proxy.local import LocalRoutes
from roller.proxy.policy import ExchangeEnd, ExchangeEndHook, RequestPolicy
from roller.proxy.redaction import Redactor
from roller.proxy.routing import Upstreams
from roller.proxy.services import ExchangeServices
from roller.proxy.upstream import UpstreamClient

log = logging.getLogger("roller.proxy")


class Relay:
    """The proxy's request handler and its in-flight bookkeeping."""

    def __init__(
        self,
        *,
        upstreams: Upstreams,
        policy: RequestPolicy | None,
        on_exchange_end: ExchangeEndHook | None,
        max_request_body: int,
        max_kept_response: int,
        redactor: Redactor,
        stopping: Callable[[], bool],
        local: LocalRoutes | None = None,
    ) -> None:
        self.on_exchange_end = on_exchange_end
        self._local = local
        self._upstreams = upstreams
        self._policy = policy
        self._limits = (max_request_body, max_kept_response)
        self._redactor = redactor
        self._stopping = stopping
        self.tape: TapeWriter | None = None
        self.services: ExchangeServices | None = None  # once open
        self.in_flight = 0
        self.exchanges = 0
        self.hook_errors = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def open(self, tape: TapeWriter, client: UpstreamClient) -> None:
        """The application started: exchanges write to `tape` and send through `client`."""
        self.tape = tape
        self.services = ExchangeServices(
            tape=tape,
            client=client,
            upstreams=self._upstreams,
            policy=self._policy,
            max_request_body=self._limits[0],
            max_kept_response=self._limits[1],
            redactor=self._redactor,
            plans=HeaderPlans(self._redactor),
            watches=IdleWatches(client.read_timeout),
            notify=None if self.on_exchange_end is None else self._end_hook,
            stopping=self._stopping,
            started=self._started,
            finished=self._finished,
            local=self._local,
        )

    def handler(self) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """The route's handler: `Exchange.serve`, bound to this relay (a coroutine
        function still, as aiohttp requires of a handler)."""
        return functools.partial(Exchange.serve, self)

    def _started(self) -> None:
        self.in_flight += 1
        self.exchanges += 1
        if self.in_flight == 1:  # busy from idle: set when the last one returns
            self._idle.clear()

    def _finished(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def wait_idle(self, timeout: float | None) -> bool:
        """True once no exchange is in flight; False if `timeout` passed first."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _end_hook(self, end: ExchangeEnd) -> None:
        """The end hook, called in place: its failure is the exchange's record, not its
        handler's."""
        hook = self.on_exchange_end
        assert hook is not None  # _end_hook is only handed out with a hook
        try:
            hook(end)
        except Exception as exc:  # noqa: BLE001 (the response is complete: recorded, counted)
            # by type only: the message (on the tape record) may quote what it read
            log.error(
                "on_exchange_end hook failed for exchange %s: %s",
                end.exchange_id,
                type(exc).__name__,
            )
            self.note_hook_error(end.exchange_id, exc)

    def note_hook_error(self, exchange_id: str, exc: BaseException) -> None:
        """Count a failure of the end hook's work for an exchange and write it on the
        exchange's tape record (also for work the hook handed on to finish later)."""
        self.hook_errors += 1
        error = {"code": type(exc).__name__, "message": str(exc)[:2000]}
        try:
            if self.tape is None:
                raise ValueError("no tape")
            self.tape.annotate(exchange_id, {"end_hook_error": error})
        except ValueError:  # the tape was closed under work that outlived it
            log.error("could not note the hook failure on exchange %s", exchange_id)

"""The proxy's request handler: one `Exchange` per request, plus in-flight bookkeeping.

Each exchange gets the same frozen `ExchangeServices` (built once here); `exchange` does
not import this module. Rules this module keeps:
- `in_flight` counts requests being handled; `wait_idle` also waits for the end hooks
  still running, so a caller that saw the proxy idle sees every hook's effect.
- End hooks run in their own tasks: a handler cancelled because its client closed the
  connection never cuts a hook (a gateway's database write) short.
- A hook that fails is counted, logged (without its message: `server_log`) and written on
  its exchange's tape record as the annotation `end_hook_error` (an `ann` frame after the
  `end`), so the failure is part of the exchange's record, not only a log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from roller.capture.tape import TapeWriter
from roller.proxy.exchange import Exchange, ExchangeServices
from roller.proxy.header_plan import HeaderPlans
from roller.proxy.policy import ExchangeEnd, ExchangeEndHook, RequestPolicy
from roller.proxy.redaction import Redactor
from roller.proxy.routing import Upstreams
from roller.proxy.upstream import UpstreamClient

log = logging.getLogger("roller.proxy")


class Relay:
    """The proxy's request handler and its in-flight bookkeeping."""

    def __init__(
        self,
        *,
        tape: TapeWriter,
        client: UpstreamClient,
        upstreams: Upstreams,
        policy: RequestPolicy | None,
        on_exchange_end: ExchangeEndHook | None,
        max_request_body: int,
        max_kept_response: int,
        redactor: Redactor,
        stopping: Callable[[], bool],
    ) -> None:
        self.on_exchange_end = on_exchange_end
        self.tape = tape
        self.services = ExchangeServices(
            tape=tape,
            client=client,
            upstreams=upstreams,
            policy=policy,
            max_request_body=max_request_body,
            max_kept_response=max_kept_response,
            redactor=redactor,
            plans=HeaderPlans(redactor),
            notify=None if on_exchange_end is None else self._start_hook,
            stopping=stopping,
        )
        self.in_flight = 0
        self.exchanges = 0
        self.hook_errors = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._hooks: set[asyncio.Task[None]] = set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.exchanges += 1
        if self.in_flight == 1:  # busy from idle: set when the last one returns
            self._idle.clear()
        try:
            return await Exchange(self.services, request).run()
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def wait_idle(self, timeout: float | None) -> bool:
        """True once no exchange is in flight and every end hook has returned; False if
        `timeout` passed first."""
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        if self._hooks:
            left = (
                None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
            )
            _, pending = await asyncio.wait(set(self._hooks), timeout=left)
            return not pending
        return True

    def _start_hook(self, end: ExchangeEnd) -> asyncio.Task[None]:
        """Run the end hook in its own task, so a handler cancelled by its client closing
        the connection never cuts a hook short."""
        task = asyncio.get_running_loop().create_task(self._run_hook(end))
        self._hooks.add(task)
        task.add_done_callback(self._hooks.discard)
        return task

    async def _run_hook(self, end: ExchangeEnd) -> None:
        hook = self.on_exchange_end
        assert hook is not None  # _start_hook is only handed out with a hook
        try:
            await hook(end)
        except Exception as exc:  # the response is complete: recorded, counted, logged
            log.exception("on_exchange_end hook failed for exchange %s", end.exchange_id)
            self.note_hook_error(end.exchange_id, exc)

    def note_hook_error(self, exchange_id: str, exc: BaseException) -> None:
        """Count a failure of the end hook's work for an exchange and write it on the
        exchange's tape record (also for work the hook handed on to finish later)."""
        self.hook_errors += 1
        error = {"code": type(exc).__name__, "message": str(exc)[:2000]}
        try:
            self.tape.annotate(exchange_id, {"end_hook_error": error})
        except ValueError:  # the tape was closed under a hook that outlived it
            log.error("could not note the hook failure on exchange %s", exchange_id)

"""The `call` row of every exchange the gateway's proxy recorded, built once it ends.

`CallRows(writer, tape_dir=...)`: `expect(exchange_id, request)` takes the row's request
side (`RequestFacts`: who, which session, protocol, model, identity), computed once by
the policy's `decide`; `on_exchange_end(end)` (the proxy's end hook) adds how it ended
and submits the row to the background writer (`roller.gateway.writer`), without a task or
a future of its own; `drain()` waits until every row handed on is committed (or its
failure noted). Rules kept:
- One row per exchange the proxy recorded, refused ones included: an exchange the
  policy never decided (refused on its head, or the policy failed) is charged from its
  tape annotation (`annotated_fields`, the same reading crash recovery makes), else to
  no one.
- Its statuses are the rulebook's (`roller.capture.statuses`, the functions finalize
  uses) over the response body the decision asked the proxy to keep, read after the
  client has its response by `roller.wire.ending` (the facts finalize's full reading
  gives, with less work where it can: an Anthropic stream's end without its
  reassembly). On the loop: a body up to `INLINE_DECODE_BYTES`, or up to
  `INLINE_QUICK_BYTES` when a terminal-only reader decides it; in a worker thread
  beyond (a full reading costs ~0.1 ms per KiB; a long stream's decode must not hold up
  the streams the loop still relays). A response the proxy let go (over its
  `max_kept_response`) is judged without its body and flagged; a decoder failure costs
  the body, never the row.
- A row that cannot be written is counted by the writer and handed to `on_row_error`
  (the server notes it on the exchange's tape record, `end_hook_error`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, overload

from roller.capture.models import ExecutionStatus, ResponseCaptureStatus
from roller.capture.statuses import ExchangeFacts, execution_status, response_capture_status
from roller.gateway.store import CallFacts
from roller.gateway.writer import StoreWriter
from roller.proxy import ExchangeEnd
from roller.wire.ending import quick_ending, response_ending
from roller.wire.endpoints import endpoint_for
from roller.wire.types import ProtocolName

log = logging.getLogger("roller.gateway")

# A response this small is read on the loop: ~0.2 ms, less than the hop to a thread costs.
INLINE_DECODE_BYTES: Final = 2048
# A response a terminal-only reader decides (`quick_ending`, ~7 µs a KiB) is read on the
# loop up to this size: about what a full reading of `INLINE_DECODE_BYTES` costs.
INLINE_QUICK_BYTES: Final = 32768

Statuses = tuple[ExecutionStatus, ResponseCaptureStatus]


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """A call row's request side: what the policy decided, computed once per request."""

    protocol: ProtocolName | None
    started_at: datetime
    session_id: str | None
    account: str | None
    principal: str | None
    family: str | None
    model: str | None
    participant_unknown: bool
    identity: dict[str, Any] | None


def annotated_fields(gateway: Mapping[str, Any]) -> dict[str, Any]:
    """The call row's fields the request's `gateway` annotation holds (the reading of an
    exchange the policy did not decide, and crash recovery's)."""
    return {
        "session_id": gateway.get("session_id"),
        "account": gateway.get("account"),
        "principal": gateway.get("principal"),
        "family": gateway.get("family"),
        "model": gateway.get("model"),
        "participant_unknown": bool(gateway.get("participant_unknown", False)),
        "identity": gateway.get("identity"),
    }


def started_at(received_ns: object, clock: Callable[[], datetime]) -> datetime:
    """When the gateway received the request (its annotation's `received_ns`)."""
    if isinstance(received_ns, int):
        return datetime.fromtimestamp(received_ns / 1e9, UTC)
    return clock()


@overload
def call_statuses(
    end: ExchangeEnd, protocol: ProtocolName | None, *, full: Literal[True] = True
) -> Statuses: ...
@overload
def call_statuses(
    end: ExchangeEnd, protocol: ProtocolName | None, *, full: bool
) -> Statuses | None: ...
def call_statuses(
    end: ExchangeEnd, protocol: ProtocolName | None, *, full: bool = True
) -> Statuses | None:
    """A call row's execution and response-capture statuses: the rulebook's, over the same
    facts finalize reads off the tape (the response body is the one the decision kept;
    `response_ending` gives `read_response`'s streamed and terminal). Not `full`: None
    unless a terminal-only reader decides the response (`quick_ending`)."""
    body = end.response_body
    read = response_ending if full else quick_ending
    ending = read(
        None if body is None else protocol,
        end.upstream_status,
        end.response_headers,
        body or b"",
    )
    if ending is None:
        return None
    streamed, terminal = ending
    facts = ExchangeFacts.of(
        outcome=end.outcome,
        status=end.upstream_status,
        streamed=streamed,
        client_bytes=end.client_bytes,
        response_bytes=end.response_bytes,
        body_bytes=end.response_bytes if body is None else len(body),
        terminal=terminal,
    )
    return execution_status(facts), response_capture_status(facts)


class CallRows:
    def __init__(
        self,
        writer: StoreWriter,
        *,
        tape_dir: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.writer = writer
        self.tape_dir = tape_dir
        self.clock = clock
        self._expected: dict[str, RequestFacts] = {}  # exchange id -> its decided facts
        self._reading: set[asyncio.Task[None]] = set()  # responses read in a thread
        # Where a row that could not be written is noted (the server: on the tape).
        self.on_row_error: Callable[[str, BaseException], None] = lambda _id, _exc: None
        writer.on_failure = self._failed

    def expect(self, exchange_id: str, request: RequestFacts) -> None:
        self._expected[exchange_id] = request

    def on_exchange_end(self, end: ExchangeEnd) -> None:
        """Submit the row and return: the proxy calls this hook in place before its
        handler returns, so it must not wait (a large body is read in a thread)."""
        request = self._expected.pop(end.exchange_id, None) or self._undecided(end)
        body = end.response_body
        if body is None or len(body) <= INLINE_DECODE_BYTES:
            self.writer.submit(self._facts(end, request, self._statuses(end, request.protocol)))
            return
        quick = self._quick_statuses(end, request.protocol, len(body))
        if quick is not None:
            self.writer.submit(self._facts(end, request, quick))
            return
        task = asyncio.get_running_loop().create_task(self._read_then_submit(end, request))
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def drain(self) -> None:
        """Wait until every ended exchange's row is committed (or its failure noted)."""
        while self._reading:
            await asyncio.wait(set(self._reading))
        await self.writer.flush()

    async def _read_then_submit(self, end: ExchangeEnd, request: RequestFacts) -> None:
        try:
            statuses = await asyncio.to_thread(self._statuses, end, request.protocol)
            self.writer.submit(self._facts(end, request, statuses))
        except Exception as exc:  # noqa: BLE001 - any failure: counted, noted on the tape
            self._failed(end.exchange_id, exc)

    def _undecided(self, end: ExchangeEnd) -> RequestFacts:
        gateway = end.annotations.get("gateway")
        gateway = gateway if isinstance(gateway, dict) else {}  # the policy itself failed
        return RequestFacts(
            protocol=endpoint_for(end.method, end.path).output_protocol,
            started_at=started_at(gateway.get("received_ns"), self.clock),
            **annotated_fields(gateway),
        )

    def _statuses(self, end: ExchangeEnd, protocol: ProtocolName | None) -> Statuses:
        try:
            return call_statuses(end, protocol)
        except Exception:  # a decoder bug must not cost the row: judge it without the body
            log.exception("reading the response of exchange %s failed", end.exchange_id)
            return call_statuses(end, None)

    @staticmethod
    def _quick_statuses(
        end: ExchangeEnd, protocol: ProtocolName | None, size: int
    ) -> Statuses | None:
        if size > INLINE_QUICK_BYTES:
            return None
        try:
            return call_statuses(end, protocol, full=False)
        except Exception:  # noqa: BLE001 - the full reading in a thread judges it
            return None

    def _facts(self, end: ExchangeEnd, request: RequestFacts, statuses: Statuses) -> CallFacts:
        return CallFacts(
            tape_dir=self.tape_dir,
            exchange_id=end.exchange_id,
            session_id=request.session_id,
            account=request.account,
            principal=request.principal,
            method=end.method,
            path=end.path,
            family=request.family,
            protocol=request.protocol,
            model=request.model,
            participant_unknown=request.participant_unknown,
            identity=request.identity,
            outcome=end.outcome,
            client_status=end.client_status,
            upstream_status=end.upstream_status,
            execution_status=statuses[0],
            response_capture_status=statuses[1],
            error_code=None if end.error is None else end.error.code,
            started_at=request.started_at,
            ended_at=self.clock(),
            flags=("response_over_limit",) if end.response_over_limit else (),
        )

    def _failed(self, exchange_id: str, exc: BaseException) -> None:
        log.error("call row of exchange %s not written: %s", exchange_id, exc)
        self.on_row_error(exchange_id, exc)

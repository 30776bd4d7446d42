"""The `call` row of every exchange the gateway's proxy recorded, built once it ends.

`CallRows(writer, tape_dir=...)`: `expect(exchange_id, part, protocol, started_ns)` takes
the row's request side (the session part `roller.gateway.session_parts` keeps: who,
which session, model, identity, bound once per session by `roller.gateway.store.
row_parts`), from the policy's `decide`; `on_exchange_end(end)` (the proxy's end hook)
adds how it ended, finishes the row (`RowMaker.row`) and submits it to the background
writer (`roller.gateway.writer`), without a task or a future of its own; `drain()` waits
until every row handed on is committed (or its failure noted). Rules kept:
- One row per exchange the proxy recorded, refused ones included: an exchange the
  policy never decided (refused on its head, or the policy failed) is charged from its
  tape annotation (`annotated_fields`, the same reading crash recovery makes), else to
  no one.
- Its statuses are the rulebook's (`roller.capture.statuses`, the functions finalize
  uses) over the response body the decision asked the proxy to keep, read after the
  client has its response by `roller.wire.ending` (the facts finalize's full reading
  gives, with less work where it can: an Anthropic response's end without its
  reassembly). On the loop: a body up to `INLINE_DECODE_BYTES`, or up to
  `INLINE_QUICK_BYTES` when a terminal-only reader decides it; in a worker thread
  beyond (a full reading costs ~0.1 ms per KiB; a long stream's decode must not hold up
  the streams the loop still relays). A response the proxy let go (over its
  `max_kept_response`) is judged without its body and flagged; a decoder failure costs
  the body, never the row.
- Its times are the request's `received_ns` (the annotation's) and the end hook's clock,
  in nanoseconds (`roller.gateway.store.row_parts` stores them to the microsecond).
- A row that cannot be written, or not even made, is counted by the writer and handed
  to `on_row_error` (the server notes it on the exchange's tape record,
  `end_hook_error`), so the run mark stays and the next start writes it from the tape.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, overload

from roller.capture.models import ExecutionStatus, ResponseCaptureStatus
from roller.capture.statuses import relayed_all, statuses_of
from roller.gateway.store.row_parts import SessionPart
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
# A decided exchange's row side: its session part, protocol, and when it was received.
Expected = tuple[SessionPart, ProtocolName | None, int]


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
    sent = end.response_bytes
    relayed = relayed_all(end.client_bytes, sent, sent if body is None else len(body))
    return statuses_of(end.outcome, end.upstream_status, streamed, relayed, terminal)


class CallRows:
    def __init__(
        self,
        writer: StoreWriter,
        *,
        tape_dir: str,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.writer = writer
        self.maker = writer.store.row_maker
        self.tape_dir = tape_dir
        self.now_ns = now_ns
        self._expected: dict[str, Expected] = {}  # exchange id -> its decided row side
        self._reading: set[asyncio.Task[None]] = set()  # responses read in a thread
        # Where a row that could not be written is noted (the server: on the tape).
        self.on_row_error: Callable[[str, BaseException], None] = lambda _id, _exc: None
        writer.on_failure = self._failed

    def expect(
        self, exchange_id: str, part: SessionPart, protocol: ProtocolName | None, started_ns: int
    ) -> None:
        self._expected[exchange_id] = (part, protocol, started_ns)

    def on_exchange_end(self, end: ExchangeEnd) -> None:
        """Submit the row and return: the proxy calls this hook in place before its
        handler returns, so it must not wait (a large body is read in a thread)."""
        expected = self._expected.pop(end.exchange_id, None) or self._undecided(end)
        body = end.response_body
        if body is None or len(body) <= INLINE_DECODE_BYTES:
            self._submit(end, expected, self._statuses(end, expected[1]))
            return
        quick = self._quick_statuses(end, expected[1], len(body))
        if quick is not None:
            self._submit(end, expected, quick)
            return
        task = asyncio.get_running_loop().create_task(self._read_then_submit(end, expected))
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def drain(self) -> None:
        """Wait until every ended exchange's row is committed (or its failure noted)."""
        while self._reading:
            await asyncio.wait(set(self._reading))
        await self.writer.flush()

    async def _read_then_submit(self, end: ExchangeEnd, expected: Expected) -> None:
        try:
            statuses = await asyncio.to_thread(self._statuses, end, expected[1])
        except Exception as exc:  # noqa: BLE001 - any failure: counted, noted on the tape
            self.writer.lost(end.exchange_id, exc)
            return
        self._submit(end, expected, statuses)

    def _submit(self, end: ExchangeEnd, expected: Expected, statuses: Statuses) -> None:
        part, _, started_ns = expected
        error = end.error
        try:
            row = self.maker.row(
                part,
                end.exchange_id,
                end.method,
                end.path,
                end.outcome,
                end.client_status,
                end.upstream_status,
                statuses,
                None if error is None else error.code,
                started_ns,
                self.now_ns(),
                end.response_over_limit,
            )
        except Exception as exc:  # noqa: BLE001 - a value no processor takes: counted, noted
            self.writer.lost(end.exchange_id, exc)
            return
        self.writer.submit(row)

    def _undecided(self, end: ExchangeEnd) -> Expected:
        gateway = end.annotations.get("gateway")
        gateway = gateway if isinstance(gateway, dict) else {}  # the policy itself failed
        protocol = endpoint_for(end.method, end.path).output_protocol
        fields = annotated_fields(gateway)
        part = self.maker.part(tape_dir=self.tape_dir, protocol=protocol, **fields)
        received = gateway.get("received_ns")
        return part, protocol, received if isinstance(received, int) else self.now_ns()

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

    def _failed(self, exchange_id: str, exc: BaseException) -> None:
        log.error("call row of exchange %s not written: %s", exchange_id, exc)
        self.on_row_error(exchange_id, exc)

"""After a crash: every exchange of the crashed run gets its one `call` row.

A gateway killed with `kill -9` leaves exchanges on the tape that were in flight (no
`end` frame) or that ended a moment before their end hook wrote the row. Rules kept:
- A running gateway marks its tape directory (`RUN_MARKER`: its pid and the first
  segment number its writer will create, numbers only grow); a clean stop removes the
  mark. A mark found at start means the previous run did not stop cleanly.
- Then, before listening, the segments of that run are read (`read_tape(from_segment=)`:
  one writer's exchanges never span another's segments) and every exchange without a
  row gets one (one transaction per `RECOVERY_BATCH` rows), from the tape alone: its
  annotations name the session, its frames give the statuses through the same rulebook
  and reading finalize uses (`roller.finalize.decode.exchange_facts`). An exchange
  without an `end` frame is `interrupted` with outcome `in_flight`
  (`roller.capture.statuses.IN_FLIGHT`) and error `no_end_frame`; nothing already written
  is changed.
- What the tape cannot say is left out, never guessed (a row's end time is the recovery's).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from roller.capture.statuses import IN_FLIGHT, execution_status, response_capture_status
from roller.capture.tape import TapeExchange, read_tape
from roller.capture.tape.format import list_segments
from roller.finalize.decode import exchange_facts
from roller.gateway.rows import annotated_fields
from roller.gateway.store import CallFacts, SessionStore
from roller.wire import codec_for
from roller.wire.endpoints import endpoint_for
from roller.wire.response import read_response

RUN_MARKER: Final = ".roller-gateway-run"
RECOVERY_BATCH: Final = 500  # rows per transaction


@dataclass(frozen=True, slots=True)
class Recovery:
    """What a start found of a previous run that did not stop cleanly."""

    crashed: bool
    rows_written: int = 0
    tape_problems: tuple[str, ...] = ()


def mark_running(tape_dir: Path) -> None:
    """Mark the tape directory as written by a running gateway (see the module docstring)."""
    tape_dir.mkdir(parents=True, exist_ok=True)
    first = max((n for n, _ in list_segments(tape_dir)), default=0) + 1
    marker = {"pid": os.getpid(), "first_segment": first}
    (tape_dir / RUN_MARKER).write_text(json.dumps(marker) + "\n")


def mark_stopped(tape_dir: Path) -> None:
    (tape_dir / RUN_MARKER).unlink(missing_ok=True)


def recover(store: SessionStore, tape_dir: Path) -> Recovery:
    """Rows for the exchanges a crashed previous run left without one (blocking I/O)."""
    marker = tape_dir / RUN_MARKER
    try:
        first = int(json.loads(marker.read_text())["first_segment"])
    except FileNotFoundError:
        return Recovery(crashed=False)
    except (OSError, ValueError, KeyError, TypeError):
        first = 0  # an unreadable mark: read the whole tape rather than miss a row
    tape = read_tape(tape_dir, from_segment=first)
    resolved = str(tape_dir.resolve())
    recorded = store.recorded_exchanges(resolved)
    now = datetime.now(UTC)
    missing = [
        facts_from_tape(exchange, resolved, now)
        for exchange in tape.exchanges
        if exchange.exchange_id not in recorded
    ]
    for start in range(0, len(missing), RECOVERY_BATCH):
        store.write_calls(missing[start : start + RECOVERY_BATCH], {})
    return Recovery(crashed=True, rows_written=len(missing), tape_problems=tape.problems)


def facts_from_tape(exchange: TapeExchange, tape_dir: str, now: datetime) -> CallFacts:
    """A call row's facts from the tape alone (the gateway's annotations and the frames)."""
    request, end, response = exchange.request, exchange.end, exchange.response
    gateway: dict[str, Any] = dict(request.annotations.get("gateway") or {})
    protocol = endpoint_for(request.method, request.path).output_protocol
    codec = None if protocol is None else codec_for(protocol)
    status = None if response is None else response.status
    reading = read_response(
        codec, status, () if response is None else response.headers, exchange.body
    )
    facts = exchange_facts(exchange, reading)
    return CallFacts(
        tape_dir=tape_dir,
        exchange_id=exchange.exchange_id,
        method=request.method,
        path=request.path,
        protocol=protocol,
        **annotated_fields(gateway),
        outcome=IN_FLIGHT if end is None or end.outcome is None else end.outcome,
        client_status=None if end is None else end.client_status,
        upstream_status=None if end is None else end.upstream_status,
        execution_status=execution_status(facts),
        response_capture_status=response_capture_status(facts),
        error_code="no_end_frame" if end is None else None if end.error is None else end.error.code,
        started_at=datetime.fromtimestamp(exchange.request_time_ns / 1e9, UTC),
        ended_at=now,
        flags=("recovered",),
    )

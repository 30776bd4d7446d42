"""Soak: `roller gateway` under 200 concurrent streaming clients, every fault, and a crash.

The proxy's faults (`tests.soak.test_soak_proxy`) plus an unauthenticated flood (a wrong
token with a 1 MiB body: refused on its head, the body never taped). Asserted: one tape
exchange per request with the outcome its fault must give, exactly one `call` row per
exchange agreeing with it, every forwarded request carried the real upstream key, no
secret (tokens, the key, redacted header and query values) in the tape, the database or
the log, flat RSS, the process alive and its exit clean.

Then `kill -9` mid-run and a restart on the same database and tape: every row written
before is still there unchanged, every exchange on the tape has exactly one row, those
that were in flight are `interrupted` (outcome `in_flight`), those that ended while their
row was still queued in the background writer get it from the tape with the end frame's
outcome (delayed, never lost), and the tape reads back with at most a torn last frame
per segment.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from pathlib import Path

from roller.capture.statuses import IN_FLIGHT
from roller.capture.tape import read_tape
from tests.soak.checks import (
    CLIENTS,
    SECONDS,
    check_no_secret,
    check_tape,
    soak,
    soak_fault,
)
from tests.soak.gateway_setup import GatewaySetup, upstream_key, write_setup
from tests.soak.load import LoadResult, Target, run_load
from tests.soak.processes import upstream, wait_until


def _upstream_stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url + "/soak/stats", timeout=10) as response:
        stats: dict[str, int] = json.loads(response.read())
    return stats


def test_the_gateway_survives_a_soak_with_faults(tmp_path: Path) -> None:
    key = upstream_key()
    upstream_proc = upstream(key, tmp_path / "upstream.log")  # it checks the key swapped in
    setup = write_setup(tmp_path, upstream_proc.url, key)
    log = tmp_path / "gateway.log"
    gateway = setup.start(log)
    try:
        target = Target(
            url=gateway.url,
            headers=setup.headers,
            secrets=setup.secrets,
            clients=CLIENTS,
            seconds=SECONDS,
            max_big=4,  # two per phase
            gateway=True,
        )
        load, result = soak("gateway", gateway, target)
        assert gateway.alive(), log.read_text()[-3000:]
        stats = _upstream_stats(upstream_proc.url)
    finally:
        code = gateway.stop()
        upstream_proc.stop()
    assert code == 0, log.read_text()[-3000:]
    exchanges = check_tape(read_tape(setup.tape), load)
    refused = [s for s in load.sent if s.fault == "unauth"]
    assert refused and all(s.status == 401 for s in refused)
    assert all(exchanges[s.soak_id].request_body == b"" for s in refused)
    forwarded = sum(1 for s in load.exchanges() if s.fault != "unauth")
    assert stats == {"requests": forwarded, "wrong_key": 0}
    store = setup.store()
    try:
        rows = store.calls()
    finally:
        store.close()
    by_exchange = {row.exchange_id: row for row in rows}
    assert len(rows) == len(by_exchange) == len(exchanges)
    for exchange in exchanges.values():
        row = by_exchange[exchange.exchange_id]
        assert exchange.end is not None
        assert (row.outcome, row.client_status) == (
            exchange.end.outcome,
            exchange.end.client_status,
        ), exchange.exchange_id
    check_no_secret(setup.secrets, setup.tape, setup.db, log)
    print(result.line())


def _load_in_background(target: Target) -> tuple[threading.Thread, list[LoadResult]]:
    out: list[LoadResult] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(run_load(target))))
    thread.start()
    return thread, out


def _rows_stored(setup: GatewaySetup) -> bool:
    store = setup.store()
    try:
        return bool(store.calls())
    finally:
        store.close()


def _slow_in_flight(tape_dir: Path) -> bool:
    """Whether a slow stream (seconds long) has its response head on the tape, no end."""
    return any(
        ex.end is None and ex.response is not None and soak_fault(ex) == "slow"
        for ex in read_tape(tape_dir).exchanges
    )


def test_kill_9_mid_run_loses_nothing_and_marks_the_in_flight(tmp_path: Path) -> None:
    key = upstream_key()
    upstream_proc = upstream(key, tmp_path / "upstream.log")
    setup = write_setup(tmp_path, upstream_proc.url, key)
    log = tmp_path / "gateway.log"
    gateway = setup.start(log)
    target = Target(
        url=gateway.url,
        headers=setup.headers,
        secrets=setup.secrets,
        clients=min(CLIENTS, 100),
        seconds=6,
        max_big=0,
        gateway=True,
    )
    thread, _ = _load_in_background(target)
    try:
        # Well into the run: once the background writer has stored rows (on a loaded
        # machine its first batches wait behind the first session resolutions) and
        # while slow streams are being relayed (on the tape, no end).
        time.sleep(2)
        assert wait_until(lambda: _rows_stored(setup), timeout=30), "no row stored under load"
        assert wait_until(lambda: _slow_in_flight(setup.tape), timeout=20)
        gateway.kill9()
        thread.join(60)
        store = setup.store()
        before = {r.exchange_id: (r.id, r.outcome, r.execution_status) for r in store.calls()}
        store.close()
        assert before, "no call row was written before the kill"
        restarted = setup.start(log)
        try:
            assert restarted.alive()
        finally:
            assert restarted.stop() == 0, log.read_text()[-3000:]
    finally:
        upstream_proc.stop()
    tape = read_tape(setup.tape)
    # A kill can tear the frame being written; never more than one per segment.
    assert len(tape.problems) <= len({p.split(":", 1)[0] for p in tape.problems}), tape.problems
    store = setup.store()
    try:
        rows = store.calls()
    finally:
        store.close()
    after = {r.exchange_id: r for r in rows}
    assert len(rows) == len(after)  # one row per exchange
    assert set(after) == {ex.exchange_id for ex in tape.exchanges}
    for exchange_id, (row_id, outcome, execution) in before.items():
        row = after[exchange_id]
        assert (row.id, row.outcome, row.execution_status) == (row_id, outcome, execution)
    in_flight = [ex for ex in tape.exchanges if ex.end is None]
    assert in_flight, "the kill found nothing in flight"
    for exchange in in_flight:
        row = after[exchange.exchange_id]
        assert (row.outcome, row.execution_status) == (IN_FLIGHT, "interrupted"), row
        assert row.error_code == "no_end_frame" and row.flags == ["recovered"]
    # Rows the background writer still held when the process died: written from the tape
    # on restart, with the outcome the tape's end frame says (delayed, never lost).
    ended_recovered = [
        ex for ex in tape.exchanges if ex.end is not None and ex.exchange_id not in before
    ]
    for exchange in ended_recovered:
        row = after[exchange.exchange_id]
        assert row.flags == ["recovered"] and row.outcome == exchange.end.outcome, row
    recovered = "exchange(s) without a call row recovered"
    assert recovered in log.read_text()
    print(
        f"soak gateway kill -9: {len(before)} rows before the kill kept, "
        f"{len(after) - len(before)} recovered ({len(in_flight)} in flight, "
        f"{len(ended_recovered)} ended but queued), "
        f"tape problems {len(tape.problems)}"
    )

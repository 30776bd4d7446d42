"""The background writer: batches, isolation of a bad row, draining, and what a stop with
unwritten rows leaves for the next start (on SQLite and PostgreSQL alike)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from roller.gateway.recovery import RUN_MARKER
from roller.gateway.server import Gateway
from roller.gateway.store import CallRow, SessionStore, StoreError, open_engine
from roller.gateway.writer import StoreWriter
from tests.gateway.conftest import ALICE_CC, GatewayFactory
from tests.gateway.test_sessions_http import opencode
from tests.gateway.test_store import T0, call_facts, plan


def _row(store: SessionStore, session_id: str | None, n: int) -> CallRow:
    (row,) = store.call_rows([call_facts(session_id, f"tape-000001:{n}")])
    return row


def test_concurrent_rows_share_transactions_and_each_lands_once(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    writer = StoreWriter(store, linger=0.05)

    async def main() -> None:
        await asyncio.gather(*(writer.record(_row(store, session, n)) for n in range(200)))
        # A second write of an exchange is a no-op: one row per exchange.
        await writer.record(_row(store, session, 7))
        writer.touch(session, T0 + timedelta(hours=1))
        await writer.close()

    asyncio.run(main())
    calls = store.calls(session)
    assert sorted(c.exchange_id for c in calls) == sorted(f"tape-000001:{n}" for n in range(200))
    assert writer.batches <= 4 and writer.failed == 0  # 200 rows, not 200 transactions
    row = store.get(session)
    assert row is not None and row.last_seen_at == T0 + timedelta(hours=1)  # drained on close


def _refuse_exchange_3(store: SessionStore) -> None:
    """Make the store refuse any batch holding exchange `…:3`."""
    real = store.write_batch

    def picky(calls: Any, touches: Any) -> dict[str, str | None]:
        if any(c.exchange_id.endswith(":3") for c in calls):
            raise StoreError("session store: value refused")
        return real(calls, touches)

    store.write_batch = picky  # type: ignore[method-assign]


def test_a_row_the_store_refuses_costs_only_itself(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    _refuse_exchange_3(store)
    writer = StoreWriter(store, linger=0.05)

    async def main() -> list[BaseException | None]:
        results = await asyncio.gather(
            *(writer.record(_row(store, session, n)) for n in range(6)), return_exceptions=True
        )
        await writer.close()
        return list(results)

    results = asyncio.run(main())
    assert [isinstance(r, StoreError) for r in results] == [n == 3 for n in range(6)]
    assert writer.failed == 1
    assert sorted(c.exchange_id[-1] for c in store.calls(session)) == ["0", "1", "2", "4", "5"]


def test_submitted_rows_need_no_future_and_a_failure_reaches_on_failure(
    store: SessionStore,
) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    _refuse_exchange_3(store)
    failures: list[str] = []
    writer = StoreWriter(store, linger=0.05, on_failure=lambda x, _exc: failures.append(x))

    async def main() -> int:
        for n in range(6):
            writer.submit(_row(store, session, n))
        await writer.flush()  # returns once every submitted row is settled
        landed = len(store.calls(session))
        await writer.flush()  # nothing queued: at once
        await writer.close()
        return landed

    assert asyncio.run(main()) == 5
    assert failures == ["tape-000001:3"] and writer.failed == 1


def test_rows_the_store_never_took_are_written_by_the_next_start(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()

    def down(*args: Any, **kwargs: Any) -> None:
        raise StoreError("session store: disk I/O error")

    gw.store.write_batch = down  # type: ignore[method-assign]
    assert opencode(gw, {"x-session-id": "ses_1"}).choices  # the client is answered
    gw.idle()
    assert gw.gateway.store_errors == 1
    old = gw.gateway
    gw.loop.run(old.stop(grace=1.0))
    assert (gw.tape_dir / RUN_MARKER).exists()  # left for the next start to reconcile
    restarted = Gateway(old.config, db_url=old.db_url, tape_dir=gw.tape_dir, environ={})
    gw.loop.run(restarted.start())
    try:
        assert restarted.recovery.crashed and restarted.recovery.rows_written == 1
        assert restarted.store is not None
        (row,) = restarted.store.calls()
        assert row.outcome == "ok" and row.flags == ["recovered"]
    finally:
        gw.loop.run(restarted.stop(grace=1.0))
    assert not (gw.tape_dir / RUN_MARKER).exists()


def test_a_stop_right_after_the_responses_commits_every_row(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    for n in range(5):
        opencode(gw, {"x-session-id": f"ses_{n}"})
    # No idle(): the stop itself must drain the rows handed on and the writer's queue.
    gw.loop.run(gw.gateway.stop(grace=1.0))
    assert not (gw.tape_dir / RUN_MARKER).exists()
    store = SessionStore(open_engine(gw.gateway.db_url))
    try:
        assert len(store.calls()) == 5
    finally:
        store.close()

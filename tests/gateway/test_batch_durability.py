"""On SQLite the background writer's batches commit at `synchronous=NORMAL` on a
connection kept for them, handed back to the pool at `FULL` (`roller.gateway.store.
batch`): every other transaction, a session's resolution first of all, keeps its synced
commit, after a failed batch too, and a connection that dropped is never reused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, text

from roller.gateway.store import SessionStore, StoreError
from roller.gateway.store.engine import open_engine
from tests.gateway.conftest import ALICE_CC
from tests.gateway.test_store import T0, call_facts, plan

FULL = 2  # what `PRAGMA synchronous` reads for FULL


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[SessionStore, list[str]]]:
    """A SQLite store whose connections report every statement they run."""
    engine = open_engine(f"sqlite:///{tmp_path / 'gateway.db'}")
    statements: list[str] = []

    @event.listens_for(engine, "connect")
    def _trace(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.set_trace_callback(statements.append)  # type: ignore[attr-defined]

    engine.dispose()  # the migration's connection was opened untraced
    store = SessionStore(engine, inactivity_seconds=60)
    try:
        yield store, statements
    finally:
        store.close()


def _synchronous(store: SessionStore) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("PRAGMA synchronous")).scalar_one())


def test_batches_commit_at_normal_on_their_own_connection_between_full_transactions(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, statements = traced
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    assert _synchronous(store) == FULL  # the resolution's transaction: synced
    statements.clear()
    store.write_calls([call_facts(session, "e1"), call_facts(session, "e2")], {session: T0})
    assert statements[:2] == ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE"]
    assert statements[-1] == "COMMIT"
    assert _synchronous(store) == FULL  # any other connection: the engine's level
    store.resolve(plan(ALICE_CC, "T"), T0)  # a resolution between batches
    statements.clear()
    store.write_calls([call_facts(session, "e3")], {})
    assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT"  # set once
    assert "PRAGMA synchronous=NORMAL" not in statements
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM call")).scalar_one() == 3
    statements.clear()
    store.close()  # the kept connection goes back at FULL before the pool closes
    assert statements == ["PRAGMA synchronous=FULL"]


def test_a_failed_batch_rolls_back_and_its_connection_serves_the_next(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, statements = traced
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    with pytest.raises(StoreError):  # no such session: the foreign key refuses the row
        store.write_calls([call_facts("no-such-session", "e1")], {})
    assert statements[-1] == "ROLLBACK"
    assert _synchronous(store) == FULL
    statements.clear()
    store.write_calls([call_facts(session, "e2")], {})
    assert statements[0] == "BEGIN IMMEDIATE"  # the same connection, still set for batches
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT exchange_id FROM call")).scalars().all() == ["e2"]


def test_a_connection_that_dropped_is_never_reused(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, statements = traced
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    store.write_calls([call_facts(session, "e1")], {})
    kept = store._batch._raw
    kept.dbapi_connection.close()  # as if the connection was lost under the writer
    statements.clear()
    store.write_calls([call_facts(session, "e2")], {})  # retried on a fresh connection
    assert statements[:2] == ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE"]
    assert store._batch._raw is not kept and not kept.is_valid
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM call")).scalar_one() == 2

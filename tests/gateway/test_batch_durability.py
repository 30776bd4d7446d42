"""On SQLite the background writer's batch commits at `synchronous=NORMAL` and hands the
connection back at `FULL` (`roller.gateway.store.batch`): every other transaction, a
session's resolution first of all, keeps its synced commit, after a failed batch too."""

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


def test_a_batch_commits_at_normal_between_full_transactions(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, statements = traced
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    assert _synchronous(store) == FULL  # the resolution's transaction: synced
    statements.clear()
    store.write_calls([call_facts(session, "e1"), call_facts(session, "e2")], {session: T0})
    assert statements[:2] == ["PRAGMA synchronous=NORMAL", "BEGIN IMMEDIATE"]
    assert statements[-2:] == ["COMMIT", "PRAGMA synchronous=FULL"]
    assert _synchronous(store) == FULL
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM call")).scalar_one() == 2


def test_a_failed_batch_hands_the_connection_back_at_full(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, statements = traced
    with pytest.raises(StoreError):  # no such session: the foreign key refuses the row
        store.write_calls([call_facts("no-such-session", "e1")], {})
    assert statements[-1] == "PRAGMA synchronous=FULL"
    assert _synchronous(store) == FULL
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM call")).scalar_one() == 0

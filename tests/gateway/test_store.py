"""The session store on SQLite and PostgreSQL: one row per key under concurrency, parents
set once, never self, never a cycle, bounded walks, source keying by inactivity."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from roller.gateway.config import Client
from roller.gateway.derivation import SessionPlan, SourceKey
from roller.gateway.store import MAX_ANCESTORS, CallFacts, SessionStore, open_engine
from roller.gateway.store.engine import MIGRATIONS_DIR
from roller.gateway.store.lineage import REFUSED_CYCLE, REFUSED_REWRITE, REFUSED_SELF
from roller.gateway.store.models import Base
from tests.gateway.conftest import ALICE_CC, ALICE_GEMINI, ALICE_OC, BOB_CC

T = TypeVar("T")
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def key(source_id: str, source_type: str = "claude-code") -> SourceKey:
    return SourceKey(source_type, source_id)


def plan(
    client: Client,
    own: str | None,
    parent: str | None = None,
    *,
    role: str | None = None,
    space: str | None = None,
) -> SessionPlan:
    space = space or client.harness
    return SessionPlan(
        client,
        None if own is None else key(own, space),
        None if parent is None else key(parent, space),
        role,  # type: ignore[arg-type]
        "test",
    )


def concurrently(n: int, work: Callable[[int], T]) -> list[T]:
    """Run `work(i)` for i in range(n) in n threads released at the same instant."""
    barrier = threading.Barrier(n)

    def run(i: int) -> T:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def count(store: SessionStore, where: str = "1=1") -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(text(f"SELECT count(*) FROM runtime_session WHERE {where}")).scalar_one()
        )


def test_migrations_create_exactly_the_models(store: SessionStore) -> None:
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_a_store_at_revision_0001_upgrades_and_keeps_its_call_rows(db_url: str) -> None:
    # A gateway database written before the call rows had a response capture status.
    engine = open_engine(db_url, migrate_to_head=False)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO call (id, tape_dir, exchange_id, method, path, participant_unknown,"
                " outcome, execution_status, started_at, ended_at) VALUES ('c1', '/t', 'x:1',"
                " 'POST', '/v1/messages', false, 'ok', 'completed', :t, :t)"
            ),
            {"t": T0},
        )
    engine.dispose()
    store = SessionStore(open_engine(db_url), inactivity_seconds=60)
    try:
        (old,) = store.calls()
        assert (old.execution_status, old.response_capture_status) == ("completed", None)
    finally:
        store.close()


def test_one_row_per_key_and_per_principal(store: SessionStore) -> None:
    first = store.resolve(plan(ALICE_CC, "S1", role="root"), T0)
    again = store.resolve(plan(ALICE_CC, "S1"), T0 + timedelta(seconds=5))
    assert first.session_id == again.session_id
    # Another principal of the same account sending the same id gets its own row.
    bob = store.resolve(plan(BOB_CC, "S1"), T0)
    assert bob.session_id != first.session_id
    row = store.get(first.session_id)
    assert row is not None and row.role == "root" and row.principal == "alice"
    assert row.first_seen_at == T0 and row.last_seen_at == T0 + timedelta(seconds=5)
    # last_seen never goes backwards when requests are resolved out of order.
    store.resolve(plan(ALICE_CC, "S1"), T0)
    assert store.get(first.session_id).last_seen_at == T0 + timedelta(seconds=5)  # type: ignore[union-attr]


def test_child_before_parent_race_makes_exactly_one_parent(store: SessionStore) -> None:
    n = 12
    results = concurrently(n, lambda i: store.resolve(plan(ALICE_CC, f"S:a{i:02d}", "S"), T0))
    parents = {r.parent_session_id for r in results}
    assert len(parents) == 1 and None not in parents
    assert count(store, "source_id = 'S'") == 1
    assert count(store) == n + 1
    # The parent's own first turn, arriving last, finds the row its children created.
    parent_turn = store.resolve(plan(ALICE_CC, "S", role="root"), T0)
    assert {parent_turn.session_id} == parents
    assert store.get(parent_turn.session_id).role == "root"  # type: ignore[union-attr]


def test_concurrent_first_turns_of_one_session_make_one_row(store: SessionStore) -> None:
    results = concurrently(10, lambda i: store.resolve(plan(ALICE_OC, "ses_root"), T0))
    assert len({r.session_id for r in results}) == 1
    assert count(store) == 1


def test_parent_is_set_once_and_never_rewritten(store: SessionStore) -> None:
    first = store.resolve(plan(ALICE_OC, "ses_child", "ses_p1"), T0)
    attempt = store.resolve(plan(ALICE_OC, "ses_child", "ses_p2"), T0)
    assert attempt.parent_refused == REFUSED_REWRITE
    assert attempt.parent_session_id == first.parent_session_id
    p1 = store.resolve(plan(ALICE_OC, "ses_p1"), T0).session_id
    assert first.parent_session_id == p1
    # Naming the same parent again is not a rewrite.
    assert store.resolve(plan(ALICE_OC, "ses_child", "ses_p1"), T0).parent_refused is None


def test_concurrent_rewrites_leave_exactly_one_parent(store: SessionStore) -> None:
    results = concurrently(8, lambda i: store.resolve(plan(ALICE_OC, "ses_c", f"ses_p{i}"), T0))
    winners = [r for r in results if r.parent_refused is None]
    assert len(winners) == 1
    assert {r.parent_session_id for r in results} == {winners[0].parent_session_id}


def test_self_parent_is_refused_in_code_and_by_the_schema(store: SessionStore) -> None:
    result = store.resolve(plan(ALICE_OC, "ses_x", "ses_x"), T0)
    assert result.parent_refused == REFUSED_SELF and result.parent_session_id is None
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(
            text("UPDATE runtime_session SET parent_session_id = id WHERE id = :id"),
            {"id": result.session_id},
        )


def test_cycles_are_refused(store: SessionStore) -> None:
    store.resolve(plan(ALICE_OC, "ses_b", "ses_a"), T0)
    store.resolve(plan(ALICE_OC, "ses_c", "ses_b"), T0)
    # a -> b -> c exists; c as a's parent would close a loop.
    refused = store.resolve(plan(ALICE_OC, "ses_a", "ses_c"), T0)
    assert refused.parent_refused == REFUSED_CYCLE and refused.parent_session_id is None


def test_parents_stay_within_principal_and_key_space(store: SessionStore) -> None:
    alice_child = store.resolve(plan(ALICE_CC, "S:a1", "S"), T0)
    bob_parent = store.resolve(plan(BOB_CC, "S"), T0)
    assert alice_child.parent_session_id != bob_parent.session_id
    explicit = store.resolve(plan(ALICE_CC, "S", space="roller"), T0)
    assert explicit.session_id != alice_child.parent_session_id


def test_lineage_walks_are_bounded_and_detect_cycles(store: SessionStore) -> None:
    ids = [store.resolve(plan(ALICE_OC, "ses_0"), T0).session_id]
    for i in range(1, MAX_ANCESTORS + 5):
        ids.append(store.resolve(plan(ALICE_OC, f"ses_{i}", f"ses_{i - 1}"), T0).session_id)
    # A link that would give a session more than 32 ancestors is refused at write time.
    assert store.get(ids[MAX_ANCESTORS + 1]).parent_session_id is None  # type: ignore[union-attr]
    assert store.get(ids[MAX_ANCESTORS]).parent_session_id == ids[MAX_ANCESTORS - 1]  # type: ignore[union-attr]
    lineage = store.lineage(ids[MAX_ANCESTORS])
    assert lineage is not None and len(lineage) == MAX_ANCESTORS
    assert lineage[0] == ids[MAX_ANCESTORS - 1] and lineage[-1] == ids[0]
    assert store.lineage(ids[0]) is None  # a root: no lineage on record
    # A loop written behind the store's back (it cannot be written through it) gives
    # unknown lineage, never a walk that runs forever.
    x = store.resolve(plan(ALICE_GEMINI, "x", space="t"), T0).session_id
    y = store.resolve(plan(ALICE_GEMINI, "y", "x", space="t"), T0).session_id
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE runtime_session SET parent_session_id = :y WHERE id = :x"),
            {"x": x, "y": y},
        )
    assert store.lineage(y) is None and store.lineage(x) is None


def test_source_keying_closes_after_inactivity(store: SessionStore) -> None:
    first = store.resolve(plan(ALICE_GEMINI, None), T0)
    assert first.source == SourceKey("source", "gemini-cli#1")
    within = store.resolve(plan(ALICE_GEMINI, None), T0 + timedelta(seconds=59))
    assert within.session_id == first.session_id
    later = store.resolve(plan(ALICE_GEMINI, None), T0 + timedelta(seconds=59 + 61))
    assert later.session_id != first.session_id and later.source.source_id == "gemini-cli#2"
    closed = store.get(first.session_id)
    assert closed is not None
    assert closed.closed_at == T0 + timedelta(seconds=59 + 60)
    assert closed.parent_session_id is None and later.parent_session_id is None
    # Another harness of the same principal has its own source rows.
    other = store.resolve(plan(ALICE_CC, None), T0)
    assert other.source.source_id == "claude-code#1"
    # The sweeper closes idle rows the same way.
    assert store.close_inactive(T0 + timedelta(hours=1)) == 2


def test_concurrent_source_keyed_requests_share_one_row(store: SessionStore) -> None:
    results = concurrently(8, lambda i: store.resolve(plan(ALICE_GEMINI, None), T0))
    assert len({r.session_id for r in results}) == 1


def test_calls_are_recorded_against_their_session(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    store.record_call(call_facts(session, "tape-000001:1", {"rule": "claude-code-headers"}))
    (call,) = store.calls(session)
    assert call.exchange_id == "tape-000001:1" and call.identity == {"rule": "claude-code-headers"}
    assert call.started_at == T0


def call_facts(
    session_id: str | None, exchange_id: str, identity: dict[str, Any] | None = None
) -> CallFacts:
    """A completed Anthropic call's facts, as the end hook would give them."""
    return CallFacts(
        tape_dir="/tape",
        exchange_id=exchange_id,
        session_id=session_id,
        account="acme",
        principal="alice",
        method="POST",
        path="/v1/messages",
        family="anthropic",
        protocol="anthropic-messages",
        model="m",
        participant_unknown=False,
        identity=identity,
        outcome="ok",
        client_status=200,
        upstream_status=200,
        execution_status="completed",
        response_capture_status="complete",
        error_code=None,
        started_at=T0,
        ended_at=T0 + timedelta(seconds=1),
    )


def _thread_after_a_pause() -> int:
    time.sleep(0.05)  # long enough for every submitted operation to be waiting at once
    return threading.get_ident()


def test_store_operations_run_off_the_loop_on_one_thread_for_sqlite(store: SessionStore) -> None:
    # SQLite has one writer: operations queue on one store thread instead of sleeping in
    # SQLite's busy handler; PostgreSQL's row locks let a pool of threads run them.
    async def main() -> tuple[int, list[int]]:
        threads = await asyncio.gather(*(store.run(_thread_after_a_pause) for _ in range(6)))
        return threading.get_ident(), list(threads)

    loop_thread, threads = asyncio.run(main())
    assert loop_thread not in threads
    if store.engine.dialect.name == "sqlite":
        assert len(set(threads)) == 1
    else:
        assert len(set(threads)) > 1

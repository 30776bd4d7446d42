"""The call rows' batched insert stores exactly what SQLAlchemy's own insert stores.

`roller.gateway.store.calls` sends a batch as tuples through one `executemany`, with the
columns' bind processors applied by hand, on the raw DB-API connection
(`roller.gateway.store.batch`); this compares every stored column, as the driver returns
it, with the same values inserted through SQLAlchemy Core, on SQLite and PostgreSQL, and
a batch's session touches with SQLAlchemy's own update.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import insert, select, text, update

from roller.gateway.store import Call, RuntimeSession, SessionStore, StoreError
from roller.gateway.store.batch import BatchWriter
from roller.gateway.store.calls import COLUMNS, CallInsert, call_values
from tests.gateway.conftest import ALICE_CC
from tests.gateway.test_row_parts import _part_args, _request_args
from tests.gateway.test_store import T0, call_facts, plan

IDENTITY = {"rule": "claude-code-headers", "rejected": [["x-claude-code-session-id", "empty"]]}


def _variants(session: str) -> list[Any]:
    base = call_facts(session, "e", IDENTITY)
    east = timezone(timedelta(hours=5, minutes=30))
    return [
        base,
        replace(base, identity=None, session_id=None, account=None, principal=None),
        replace(base, model="\ud800" + "m" * 300, path="/v1/a\x00b", flags=("recovered",)),
        replace(base, identity={"k\ud800": ["v\x00", 1, None, True]}, participant_unknown=True),
        replace(base, started_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=east)),
        replace(base, client_status=None, upstream_status=None, error_code="upstream_timeout"),
        replace(base, response_capture_status="partial", ended_at=T0 + timedelta(days=400)),
    ]


def _stored(store: SessionStore, prefix: str) -> list[tuple[Any, ...]]:
    names = ", ".join(c for c in COLUMNS if c != "id")
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(f"SELECT {names} FROM call WHERE exchange_id LIKE :p ORDER BY exchange_id"),
            {"p": prefix + "%"},
        ).all()
    return [tuple(row) for row in rows]


def test_the_batched_insert_stores_what_sqlalchemy_stores(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    variants = _variants(session)
    ours = [replace(f, exchange_id=f"ours:{n}") for n, f in enumerate(variants)]
    theirs = [replace(f, exchange_id=f"core:{n}") for n, f in enumerate(variants)]
    store.write_calls(ours, {})
    with store.engine.begin() as conn:
        rows = [dict(zip(COLUMNS, call_values(f), strict=True)) for f in theirs]
        conn.execute(insert(Call), rows)
    mine, reference = _stored(store, "ours:"), _stored(store, "core:")
    assert len(mine) == len(variants)
    exchange = COLUMNS.index("exchange_id") - 1  # "id" is not selected
    for got, want in zip(mine, reference, strict=True):
        assert got[exchange].split(":")[1] == want[exchange].split(":")[1]
        assert got[:exchange] + got[exchange + 1 :] == want[:exchange] + want[exchange + 1 :]
    # and the ORM reads them back as the facts were given, made storable
    by_id = {c.exchange_id: c for c in store.calls()}
    assert by_id["ours:4"].started_at == variants[4].started_at.astimezone(UTC)
    flags = ["recovered", "escaped:path", "escaped:model", "truncated:model"]
    assert by_id["ours:2"].flags == flags
    assert by_id["ours:3"].identity == {"k\\ud800": ["v\\x00", 1, None, True]}


def test_a_postgresql_batch_is_one_json_document_storing_what_executemany_stores(
    store: SessionStore,
) -> None:
    """On PostgreSQL through psycopg a batch's rows go as one JSON document (one statement,
    `document_insert`): every variant above fits it, bound as the end hook binds a row
    (texts) and as crash recovery does (psycopg's JSON wrappers, datetimes), and the rows
    stored are the ones `executemany` stores. A value orjson cannot write (a `Decimal`
    status, which psycopg adapts) sends its batch by `executemany` instead."""
    dialect = store.engine.dialect
    insert_ = CallInsert.of(dialect)
    writer = BatchWriter.of(store.engine, insert_.sql, insert_.document_sql)
    if dialect.name != "postgresql":
        assert insert_.document_sql is None
        writer.write(insert_.rows([]), {})
        assert writer.documents == 0
        return
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    variants = _variants(session)
    by_facts = insert_.rows([replace(f, exchange_id=f"doc:{n}") for n, f in enumerate(variants)])
    maker = store.row_maker  # the end hook's rows: times and JSON values as text
    parts: list[dict[str, Any]] = [{}, {"identity": None}, {"model": "m\x00"}]
    made = [
        maker.row(maker.part(**_part_args(session, **part)), **_request_args(f"{prefix}{n}"))
        for prefix in ("hot:", "hot-many:")
        for n, part in enumerate(parts)
    ]
    slow = BatchWriter.of(store.engine, insert_.sql)  # executemany, always
    try:
        writer.write(by_facts, {})
        writer.write(made[:3], {})
        assert writer.documents == 2
        many = [replace(f, exchange_id=f"many:{n}") for n, f in enumerate(variants)]
        slow.write(insert_.rows(many), {})
        slow.write(made[3:], {})
        odd = insert_.rows([replace(variants[0], exchange_id="odd:0")])[0]
        psycopg_only: Any = Decimal(201)  # psycopg adapts it, orjson does not
        writer.write([odd._replace(client_status=psycopg_only)], {})
        assert writer.documents == 2  # that batch took executemany
    finally:
        writer.close()
        slow.close()
    assert slow.documents == 0
    # every column but the ids, JSON as the text stored (PostgreSQL's json keeps it verbatim)
    names = ", ".join(
        f"{c}::text" if c in ("identity", "flags") else c
        for c in COLUMNS
        if c not in ("id", "exchange_id")
    )

    def stored(prefix: str) -> list[tuple[Any, ...]]:
        query = f"SELECT {names} FROM call WHERE exchange_id LIKE :p ORDER BY exchange_id"
        with store.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(query), {"p": prefix + "%"})]

    assert stored("doc:") == stored("many:")
    assert stored("hot:") == stored("hot-many:")
    (odd_row,) = _stored(store, "odd:")
    assert odd_row[COLUMNS.index("client_status") - 1] == 201


def test_writing_a_batch_again_adds_no_row(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    batch = [call_facts(session, f"x:{n}") for n in range(3)]
    store.write_calls(batch, {})
    store.write_calls([*batch, call_facts(session, "x:3")], {})
    assert sorted(c.exchange_id for c in store.calls(session)) == [f"x:{n}" for n in range(4)]


def _last_seen(store: SessionStore, session_id: str) -> Any:
    with store.engine.connect() as conn:
        return conn.execute(
            text("SELECT last_seen_at FROM runtime_session WHERE id = :i"), {"i": session_id}
        ).scalar_one()


def test_a_batch_touch_stores_what_sqlalchemys_update_stores(store: SessionStore) -> None:
    ours = store.resolve(plan(ALICE_CC, "S1"), T0).session_id
    theirs = store.resolve(plan(ALICE_CC, "S2"), T0).session_id
    child = store.resolve(plan(ALICE_CC, "C", parent="S1"), T0).session_id
    east = timezone(timedelta(hours=5, minutes=30))
    when = datetime(2026, 11, 29, 18, 0, 0, 7, tzinfo=east)  # later than T0, not UTC
    parents = store.write_batch([], {ours: when, child: when, "no-such-row": when})
    assert parents == {ours: None, child: ours, "no-such-row": None}
    with store.engine.begin() as conn:
        conn.execute(
            update(RuntimeSession)
            .where(RuntimeSession.id == theirs, RuntimeSession.last_seen_at < when)
            .values(last_seen_at=when)
        )
    assert _last_seen(store, ours) == _last_seen(store, theirs)
    # a touch never moves last_seen_at back
    store.write_batch([], {ours: T0})
    assert _last_seen(store, ours) == _last_seen(store, theirs)
    assert store.get(ours).last_seen_at == when.astimezone(UTC)  # type: ignore[union-attr]


def test_a_refused_batch_is_a_store_error_and_the_pool_stays_usable(store: SessionStore) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), T0).session_id
    orphan = call_facts("no-such-session", "x:orphan")  # the foreign key refuses it
    for _ in range(3):  # more attempts than the pool has idle connections to lose
        with pytest.raises(StoreError, match="session store"):
            store.write_calls([call_facts(session, "x:ok"), orphan], {})
    assert store.calls(session) == []  # the batch is one transaction: nothing landed
    store.write_calls([call_facts(session, "x:ok")], {})
    with store.engine.connect() as conn:
        stored = conn.execute(select(Call.exchange_id)).scalars().all()
    assert stored == ["x:ok"]


def test_a_kept_identity_summary_binds_as_its_processor_binds_it(store: SessionStore) -> None:
    insert_ = CallInsert.of(store.engine.dialect)
    position = COLUMNS.index("identity")
    process = insert_.processors[position]
    assert process is not None
    shared = {"rule": "claude-code-headers", "session_key": "S", "rejected": []}
    other = {**shared, "session_key": "T"}
    calls = [call_facts("s", f"e{n}", shared if n % 2 else other) for n in range(4)]
    calls.append(call_facts("s", "e9", None))
    bound = [_sent(row[position]) for row in insert_.rows(calls)]
    assert bound == [_sent(process(v)) for v in (other, shared, other, shared, None)]
    # an equal summary that is another object is bound on its own, not mistaken for one kept
    again = insert_.rows([call_facts("s", "e", {**shared, "session_key": "U"})])
    assert _sent(again[0][position]) == _sent(process({**shared, "session_key": "U"}))


def _sent(bound: Any) -> Any:
    """What the driver is handed (psycopg's JSON wrapper compares by identity)."""
    return getattr(bound, "obj", bound)


def test_a_time_binds_as_the_dialects_own_processor_binds_it(store: SessionStore) -> None:
    dialect = store.engine.dialect
    insert_ = CallInsert.of(dialect)
    east = timezone(timedelta(hours=5, minutes=30))
    times = [
        T0,
        datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=east),
        datetime(5, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        None,
    ]
    for name in ("started_at", "ended_at"):
        ours = insert_.processors[COLUMNS.index(name)]
        theirs = Call.__table__.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        assert ours is not None and theirs is not None
        assert [ours(t) for t in times] == [theirs(t) for t in times]
        with pytest.raises(ValueError, match="naive"):
            ours(datetime(2026, 1, 1))

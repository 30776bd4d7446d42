"""A call row made from a session part and the request's own values (the gateway's hot
path, `roller.gateway.store.row_parts`) is the row `CallInsert.rows` makes of the same
facts, bound and stored alike, on SQLite and PostgreSQL: ordinary rows take the fast
path, and every row where something must be stored otherwise than given takes the
general one, flagged as before."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.dialects import sqlite

from roller.gateway.store import CallFacts, CallRow, SessionStore
from roller.gateway.store.bound_values import text_times, utc_from_ns
from roller.gateway.store.calls import COLUMNS, CallInsert
from roller.gateway.store.row_parts import RowMaker, SessionPart
from tests.gateway.conftest import ALICE_CC
from tests.gateway.test_store import plan

IDENTITY = {"rule": "claude-code-headers", "session_key": "S", "rejected": []}
NS = 1_764_720_000_123_456_789  # 2025-12-03 00:00:00.123456789 UTC


def _part_args(session: str | None, **changed: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "tape_dir": "/tape",
        "session_id": session,
        "account": "acme",
        "principal": "alice",
        "family": "anthropic",
        "protocol": "anthropic-messages",
        "model": "claude-sonnet-4-5",
        "participant_unknown": False,
        "identity": IDENTITY,
    }
    return {**args, **changed}


def _request_args(exchange_id: str, **changed: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "exchange_id": exchange_id,
        "method": "POST",
        "path": "/v1/messages",
        "outcome": "ok",
        "client_status": 200,
        "upstream_status": 200,
        "statuses": ("completed", "complete"),
        "error_code": None,
        "started_ns": NS,
        "ended_ns": NS + 1_234_567_891,
        "over_limit": False,
    }
    return {**args, **changed}


def _facts(part: dict[str, Any], request: dict[str, Any]) -> CallFacts:
    return CallFacts(
        **part,
        exchange_id=request["exchange_id"],
        method=request["method"],
        path=request["path"],
        outcome=request["outcome"],
        client_status=request["client_status"],
        upstream_status=request["upstream_status"],
        execution_status=request["statuses"][0],
        response_capture_status=request["statuses"][1],
        error_code=request["error_code"],
        started_at=utc_from_ns(request["started_ns"]),
        ended_at=utc_from_ns(request["ended_ns"]),
        flags=("response_over_limit",) if request["over_limit"] else (),
    )


def _cases(session: str) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
    """(part, request, whether the fast path makes it)."""
    second = (NS // 10**9 + 1) * 10**9  # a second's first nanosecond
    return [
        (_part_args(session), {}, True),
        (
            _part_args(session),
            {"error_code": "upstream_timeout", "outcome": "upstream_timeout"},
            True,
        ),
        (_part_args(session), {"over_limit": True}, True),
        (_part_args(session), {"started_ns": second - 1, "ended_ns": second}, True),
        (_part_args(None, account=None, principal=None, identity=None), {}, True),
        (_part_args(session, participant_unknown=True, model=None), {}, True),
        (_part_args(session), {"path": "/v1/mess\u00e4ges"}, False),  # non-ASCII, storable
        (_part_args(session), {"path": "/v1/a\x00b"}, False),
        (_part_args(session), {"path": "/v1/\ud800"}, False),
        (_part_args(session), {"method": "M" * 41}, False),
        (_part_args(session), {"error_code": "e" * 61}, False),
        (_part_args(session), {"exchange_id_suffix": "x" * 100}, False),
        (_part_args(session, model="\ud800" + "m" * 300), {"over_limit": True}, False),
        (_part_args(session, identity={"k\ud800": ["v\x00"]}), {}, False),
        (_part_args(session), {"statuses": ("completed", "c" * 21)}, False),
    ]


def _sent(value: Any) -> Any:
    """What the driver is handed (psycopg's JSON wrapper compares by identity)."""
    return getattr(value, "obj", value)


def _stored(store: SessionStore, exchange_id: str) -> tuple[Any, ...]:
    # JSON columns as the text stored (PostgreSQL's json keeps it verbatim), times as read
    text_of = "{}::text" if store.engine.dialect.name == "postgresql" else "{}"
    names = ", ".join(
        text_of.format(c) if c in ("identity", "flags") else c
        for c in COLUMNS
        if c not in ("id", "exchange_id")
    )
    with store.engine.connect() as conn:
        return tuple(
            conn.execute(
                text(f"SELECT {names} FROM call WHERE exchange_id = :x"), {"x": exchange_id}
            ).one()
        )


def test_a_row_from_its_parts_is_the_row_of_its_facts(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.resolve(plan(ALICE_CC, "S"), datetime.now(UTC)).session_id
    maker = store.row_maker
    assert maker.fast  # SQLite and PostgreSQL alike
    sqlite_store = store.engine.dialect.name == "sqlite"
    general = maker.insert.rows
    taken: list[int] = []

    def counted(self: CallInsert, calls: Any) -> list[CallRow]:
        taken.append(len(calls))
        return general(calls)

    monkeypatch.setattr(CallInsert, "rows", counted)
    rows, references = [], []
    for n, (part_args, changed, fast) in enumerate(_cases(session)):
        suffix = changed.pop("exchange_id_suffix", "")
        request = _request_args(f"parts:{n}{suffix}", **changed)
        reference = _request_args(f"facts:{n}{suffix}", **changed)
        taken.clear()
        row = maker.row(maker.part(**part_args), **request)
        assert taken == ([] if fast else [1]), n
        (expected,) = general([_facts(part_args, reference)])
        for name, got, want in zip(COLUMNS, row, expected, strict=True):
            # (On PostgreSQL times and JSON go as text the server casts: compared stored.)
            if name not in ("id", "exchange_id") and (sqlite_store or not fast):
                assert _sent(got) == _sent(want), (n, name)
        rows.append(row)
        references.append(expected)
    store.write_batch([*rows, *references], {})
    for n, (row, reference) in enumerate(zip(rows, references, strict=True)):
        assert _stored(store, row.exchange_id) == _stored(store, reference.exchange_id), n
    # and the flags of the rows that took the general way are there
    flags = {c.exchange_id: c.flags for c in store.calls()}
    assert flags["parts:7"] == ["escaped:path"]
    assert flags["parts:12"] == ["response_over_limit", "escaped:model", "truncated:model"]


def test_a_part_that_is_not_plain_sends_every_row_the_general_way(store: SessionStore) -> None:
    maker = store.row_maker
    part = maker.part(**_part_args("s", model="m\x00"))
    assert isinstance(part, SessionPart) and part.values is None
    assert maker.part(**_part_args("s")).values is not None


def test_sqlite_time_text_is_the_processors() -> None:
    # (PostgreSQL binds the datetime itself: the first test compares those rows.)
    dialect = sqlite.dialect()
    process = CallInsert.of(dialect).processors[COLUMNS.index("started_at")]
    assert process is not None
    times = text_times()
    rng = random.Random(7)
    instants = [0, 10**9 - 1, 10**9, NS, 253_402_300_799_999_999_999]
    instants += [rng.randrange(0, 253_402_300_799 * 10**9) for _ in range(500)]
    instants += [NS + k * 333_333_333 for k in range(40)]  # seconds revisited out of order
    for ns in instants + instants[::-1]:
        expected = process(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000))
        assert times(ns) == expected, ns


def test_times_are_stored_to_the_microsecond_below() -> None:
    assert utc_from_ns(NS) == datetime(2025, 12, 3, 0, 0, 0, 123456, tzinfo=UTC)
    assert utc_from_ns(999) == datetime(1970, 1, 1, tzinfo=UTC)
    assert utc_from_ns(NS) == datetime.fromtimestamp(NS // 1000 / 1e6, UTC)


def test_a_dialect_whose_processors_change_values_gets_every_row_the_general_way() -> None:
    insert = CallInsert.of(sqlite.dialect())
    processors = list(insert.processors)
    processors[COLUMNS.index("path")] = lambda v: None if v is None else v.upper()
    maker = RowMaker(CallInsert(insert.sql, tuple(processors)), sqlite.dialect())
    assert not maker.fast
    part = maker.part(**_part_args("s"))
    assert part.values is None
    row = maker.row(part, **_request_args("x"))
    assert row.path == "/V1/MESSAGES"

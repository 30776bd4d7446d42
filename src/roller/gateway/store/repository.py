"""The session store's operations: resolve a request to rows, record calls and notes, walk
lineage. Synchronous, one transaction per operation; the gateway runs each off its event
loop with `await store.run(store.op, ...)`.

Rules this module keeps:
- Exactly one row per source key, under any concurrency, and source-keyed generations:
  `roller.gateway.store.session_rows`.
- Parent links follow `roller.gateway.store.lineage` (set once, no cycle, no placeholder
  row for a refused parent, every claim audited with the request it came from). Only
  `resolve` links parents, and only the gateway's model requests call it; the routes
  look their caller up with `find_session`, which never writes. On PostgreSQL a
  resolution that names a parent first takes a per-account transaction-scoped advisory
  lock, before it inserts anything: two concurrent assignments then cannot close a cycle
  between them, and two first turns naming each other as parent cannot deadlock on each
  other's uncommitted rows (SQLite serialises every write transaction already).
- A transient failure (a deadlock or serialization failure, a connection that dropped,
  a locked SQLite file) is retried with a short backoff before it becomes a `StoreError`.
- Call rows are written in batches (`write_batch`: one transaction, one `executemany` of
  `roller.gateway.store.calls`' insert — on PostgreSQL one statement over the batch as a
  JSON document — whose values are made storable and bound first,
  by `row_maker` on the gateway's hot path or from `CallFacts` by `write_calls`, and
  which is `ON CONFLICT DO NOTHING` on its exchange, so retrying a write that did land
  is a no-op: one row per exchange).
- On SQLite every operation runs on one store thread. SQLite has one writer at a time;
  concurrent write transactions from several threads only wait on each other's lock
  (its busy handler sleeps 1 ms, then 2, 5, 10 … ms and retries), which on the measured
  VM cost ~4 ms of CPU and ~5 ms of latency per gateway request; queued on one thread
  they run back to back. PostgreSQL takes row locks and runs on the default pool.
"""

from __future__ import annotations

import asyncio
import functools
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, func, select, text, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session

from roller.gateway.derivation import SessionPlan, SourceKey
from roller.gateway.store import session_rows
from roller.gateway.store.batch import ATTEMPTS, TRANSIENT_SQLSTATES, BatchWriter
from roller.gateway.store.calls import CallFacts, CallInsert, CallRow
from roller.gateway.store.engine import StoreError
from roller.gateway.store.ids import new_id
from roller.gateway.store.lineage import (
    RequestRef,
    ancestors,
    link_parent,
    parent_of,
    record_assignment,
)
from roller.gateway.store.models import Call, Note, ParentAssignment, RuntimeSession
from roller.gateway.store.row_parts import RowMaker

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Resolution:
    """The rows one request resolved to.

    `parent_refused` says why a parent the wire named was not recorded (the stored
    parent, if any, is kept)."""

    session_id: str
    parent_session_id: str | None
    source: SourceKey
    parent_refused: str | None = None


def _account_lock_key(account: str) -> int:
    # A stable signed 32-bit key per account for pg_advisory_xact_lock.
    return zlib.crc32(account.encode("utf-8")) - 2**31


class SessionStore:
    def __init__(self, engine: Engine, *, inactivity_seconds: float = 1800.0) -> None:
        self.engine = engine
        self.inactivity = timedelta(seconds=inactivity_seconds)
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="roller-store")
            if engine.dialect.name == "sqlite"
            else None  # the event loop's default pool
        )
        self._call_insert = CallInsert.of(engine.dialect)
        self.row_maker = RowMaker(self._call_insert, engine.dialect)  # the end hook's rows
        self._batch = BatchWriter.of(engine, self._call_insert.sql, self._call_insert.document_sql)

    async def run(self, op: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a store operation off the event loop (on SQLite: on the one store thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(op, *args, **kwargs))

    def close(self) -> None:
        """Finish queued operations, stop the store thread, close the connections."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._batch.close()  # the writer's connection, back at the engine's settings
        self.engine.dispose()

    # -- resolving a request -------------------------------------------------------------

    def resolve(
        self, plan: SessionPlan, now: datetime, request: RequestRef | None = None
    ) -> Resolution:
        """Find or create the rows `plan` names, link the parent, touch last-seen.
        `request` is the tape exchange it is for (named in the lineage audit)."""
        return self._transaction(lambda conn: self._resolve(conn, plan, now, request))

    def _transaction(self, work: Callable[[Connection], _T]) -> _T:
        """`work` in one transaction, retried while it fails transiently."""
        for attempt in range(ATTEMPTS):
            try:
                with self.engine.begin() as conn:
                    return work(conn)
            except SQLAlchemyError as exc:
                if attempt + 1 == ATTEMPTS or not _transient(exc):
                    raise StoreError(f"session store: {_reason(exc)}") from None
                time.sleep(0.005 * 4**attempt)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _resolve(
        self, conn: Connection, plan: SessionPlan, now: datetime, request: RequestRef | None
    ) -> Resolution:
        client = plan.client
        if plan.own is None:
            own_id, key = session_rows.source_row(conn, client, now, self.inactivity)
            return Resolution(own_id, parent_of(conn, own_id), key)
        if plan.parent is not None and conn.dialect.name == "postgresql":
            # Before any insert: see the module docstring (cycles, deadlocks).
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:k)"), {"k": _account_lock_key(client.account)}
            )
        own_id = session_rows.find_or_create(conn, client, plan.own, plan.rule, now, touch=True)
        if plan.role is not None:
            conn.execute(
                update(RuntimeSession)
                .where(RuntimeSession.id == own_id, RuntimeSession.role.is_(None))
                .values(role=plan.role)
            )
        refused: str | None = None
        parent = plan.parent
        if parent is not None:
            refused = link_parent(
                conn,
                plan,
                own_id,
                session_rows.select_key(conn, client, parent),
                lambda: session_rows.find_or_create(
                    conn, client, parent, plan.rule, now, touch=False
                ),
                lambda parent_id, outcome: record_assignment(
                    conn, plan, own_id, parent_id, outcome, request, now
                ),
            )
        return Resolution(own_id, parent_of(conn, own_id), plan.own, refused)

    def find_session(self, plan: SessionPlan, now: datetime) -> str | None:
        """The row `plan` names, if it exists: never creates one, never links a parent
        (the routes' caller). Source keying: the principal's open row of this window."""
        try:
            with self.engine.connect() as conn:
                if plan.own is not None:
                    return session_rows.select_key(conn, plan.client, plan.own)
                latest = conn.execute(session_rows.latest_source(plan.client)).one_or_none()
        except SQLAlchemyError as exc:
            raise StoreError(f"session store: {_reason(exc)}") from None
        if latest is None or latest.closed_at is not None:
            return None
        return str(latest.id) if latest.last_seen_at >= now - self.inactivity else None

    def close_inactive(self, now: datetime) -> int:
        """Close every source-keyed row idle for longer than the inactivity window (at
        the moment the window ran out). Returns how many were closed."""
        cutoff = now - self.inactivity
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(RuntimeSession.id, RuntimeSession.last_seen_at).where(
                    RuntimeSession.source_type == "source",
                    RuntimeSession.closed_at.is_(None),
                    RuntimeSession.last_seen_at < cutoff,
                )
            ).all()
            for row in rows:
                session_rows.close(conn, row.id, row.last_seen_at + self.inactivity)
        return len(rows)

    # -- lineage -------------------------------------------------------------------------

    def lineage(self, session_id: str) -> tuple[str, ...] | None:
        """The target's known ancestors, nearest first (at most 32), for the note scope;
        None when it has no parent on record or its chain loops."""
        with self.engine.connect() as conn:
            chain = ancestors(conn, session_id)
        if chain is None or len(chain) < 2:
            return None
        return chain[1:]

    def get(self, session_id: str) -> RuntimeSession | None:
        with Session(self.engine) as orm:
            return orm.get(RuntimeSession, session_id)

    def sessions(self, account: str | None = None) -> list[RuntimeSession]:
        query = select(RuntimeSession).order_by(
            RuntimeSession.first_seen_at, RuntimeSession.source_id
        )
        if account is not None:
            query = query.where(RuntimeSession.account == account)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def children(self, session_ids: Sequence[str]) -> list[RuntimeSession]:
        if not session_ids:
            return []
        query = (
            select(RuntimeSession)
            .where(RuntimeSession.parent_session_id.in_(list(session_ids)))
            .order_by(RuntimeSession.first_seen_at, RuntimeSession.source_id)
        )
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def calls(self, session_id: str | None = None) -> list[Call]:
        query = select(Call).order_by(Call.started_at, Call.exchange_id)
        if session_id is not None:
            query = query.where(Call.session_id == session_id)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def call_counts(self) -> dict[str, int]:
        """Calls per session id."""
        query = (
            select(Call.session_id, func.count())
            .where(Call.session_id.is_not(None))
            .group_by(Call.session_id)
        )
        with self.engine.connect() as conn:
            return {str(sid): int(n) for sid, n in conn.execute(query)}

    # -- calls and notes -----------------------------------------------------------------

    def record_call(self, facts: CallFacts) -> None:
        """The exchange's one `call` row (a second write for the same exchange is a
        no-op); its values made storable, and flagged where they had to be changed."""
        self.write_calls([facts], {})

    def write_calls(
        self, calls: Sequence[CallFacts], touches: Mapping[str, datetime]
    ) -> dict[str, str | None]:
        """`write_batch` of the rows `calls` make (crash recovery, tests)."""
        return self.write_batch(self.call_rows(calls), touches)

    def call_rows(self, calls: Sequence[CallFacts]) -> list[CallRow]:
        """The rows `calls` make: made storable (and flagged), bound for the driver."""
        try:
            return self._call_insert.rows(calls) if calls else []
        except (TypeError, ValueError) as exc:  # a value no bind processor takes
            raise StoreError(f"session store: call row not storable: {exc}") from None

    def write_batch(
        self, rows: Sequence[CallRow], touches: Mapping[str, datetime]
    ) -> dict[str, str | None]:
        """Call rows (bound: `roller.gateway.store.row_parts`, `CallInsert.rows`) and
        `last_seen_at` touches (session id -> when), one transaction (the background
        writer's batch, `roller.gateway.writer`). Returns each touched session's parent
        as it is now (the resolution cache learns a parent another process set from it).
        On the raw DB-API connection (`roller.gateway.store.batch`)."""
        return self._batch.write(rows, touches)

    def recorded_exchanges(self, tape_dir: str) -> set[str]:
        """The exchange ids of `tape_dir` that have a call row."""
        query = select(Call.exchange_id).where(Call.tape_dir == tape_dir)
        with self.engine.connect() as conn:
            return {str(x) for x in conn.execute(query).scalars()}

    def parent_assignments(self) -> list[ParentAssignment]:
        """The lineage audit, oldest first."""
        query = select(ParentAssignment).order_by(ParentAssignment.created_at, ParentAssignment.id)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def add_note(
        self,
        *,
        account: str,
        author_id: str,
        target_id: str,
        body: str,
        allowed_by: str,
        now: datetime,
    ) -> Note:
        note = Note(
            id=new_id(),
            account=account,
            author_session_id=author_id,
            target_session_id=target_id,
            body=body,
            allowed_by=allowed_by,
            created_at=now,
        )
        try:
            with Session(self.engine, expire_on_commit=False) as orm, orm.begin():
                orm.add(note)
        except SQLAlchemyError as exc:
            raise StoreError(f"session store: {_reason(exc)}") from None
        return note

    def notes_for(self, target_id: str) -> list[Note]:
        query = (
            select(Note)
            .where(Note.target_session_id == target_id)
            .order_by(Note.created_at, Note.id)
        )
        with Session(self.engine) as orm:
            return list(orm.scalars(query))


def _transient(exc: SQLAlchemyError) -> bool:
    """A failure that may not happen again: worth retrying the whole transaction."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in TRANSIENT_SQLSTATES:
        return True
    return "database is locked" in str(orig)


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]

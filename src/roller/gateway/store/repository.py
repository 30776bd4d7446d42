"""The session store's operations: resolve a request to rows, record calls and notes, walk
lineage. Synchronous, one transaction per operation; the gateway runs each off its event
loop with `await store.run(store.op, ...)`.

Rules this module keeps:
- Exactly one row per source key, under any concurrency: a row is created with
  `INSERT … ON CONFLICT DO NOTHING` on (account, principal, source_type, source_id) and
  then selected, so concurrent first turns, or a child arriving before its parent's own
  turn, all end on the same row. A parent is created or found by its source key exactly
  as the parent's own turn would.
- A parent is set once and never rewritten: `UPDATE … WHERE parent_session_id IS NULL`.
  Never the row itself (also a CHECK constraint), and never a parent whose ancestor chain
  (walked at most `MAX_ANCESTORS` hops) contains the child: cycles are refused. On
  PostgreSQL parent assignments in one account are serialised with a transaction-scoped
  advisory lock, so two concurrent assignments cannot close a cycle between them (SQLite
  serialises every write transaction already).
- Ancestor and subtree walks are bounded and detect cycles; a chain that loops has
  unknown lineage (None), never a partial one that could widen a scope.
- On SQLite every operation runs on one store thread. SQLite has one writer at a time;
  concurrent write transactions from several threads only wait on each other's lock
  (its busy handler sleeps 1 ms, then 2, 5, 10 … ms and retries), which on the measured
  VM cost ~4 ms of CPU and ~5 ms of latency per gateway request; queued on one thread
  they run back to back. PostgreSQL takes row locks and runs on the default pool.
- Source-keyed rows (no identity on the wire) are per (principal, harness) and closed
  after `inactivity_seconds` without a request; a closed row is never reopened: the next
  request opens the next generation.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, func, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from roller.gateway.config import Client
from roller.gateway.derivation import SessionPlan, SourceKey, source_key_for_principal
from roller.gateway.store.engine import StoreError
from roller.gateway.store.models import Call, Note, RuntimeSession

MAX_ANCESTORS: Final = 32

_P = ParamSpec("_P")
_T = TypeVar("_T")

REFUSED_SELF: Final = "a session cannot be its own parent"
REFUSED_REWRITE: Final = "the session already has another parent (set once, never rewritten)"
REFUSED_CYCLE: Final = "the parent descends from the session (cycle)"
REFUSED_DEPTH: Final = f"the parent's ancestor chain is longer than {MAX_ANCESTORS}"


@dataclass(frozen=True, slots=True)
class Resolution:
    """The rows one request resolved to.

    `parent_refused` says why a parent the wire named was not recorded (the stored
    parent, if any, is kept)."""

    session_id: str
    parent_session_id: str | None
    source: SourceKey
    parent_refused: str | None = None


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the gateway knows about an exchange when it ends."""

    tape_dir: str
    exchange_id: str
    session_id: str | None
    account: str | None
    principal: str | None
    method: str
    path: str
    family: str | None
    protocol: str | None
    model: str | None
    participant_unknown: bool
    identity: dict[str, Any] | None
    outcome: str
    client_status: int | None
    upstream_status: int | None
    execution_status: str
    response_capture_status: str
    error_code: str | None
    started_at: datetime
    ended_at: datetime


def new_id() -> str:
    return str(uuid.uuid4())


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

    async def run(self, op: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run a store operation off the event loop (on SQLite: on the one store thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(op, *args, **kwargs))

    def close(self) -> None:
        """Finish queued operations, stop the store thread, close the connections."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self.engine.dispose()

    # -- resolving a request -------------------------------------------------------------

    def resolve(self, plan: SessionPlan, now: datetime) -> Resolution:
        """Find or create the rows `plan` names, link the parent, touch last-seen."""
        try:
            with self.engine.begin() as conn:
                return self._resolve(conn, plan, now)
        except SQLAlchemyError as exc:
            raise StoreError(f"session store: {_reason(exc)}") from None

    def _resolve(self, conn: Connection, plan: SessionPlan, now: datetime) -> Resolution:
        client = plan.client
        if plan.own is None:
            own_id, key = self._source_row(conn, client, now)
            return Resolution(own_id, self._parent_of(conn, own_id), key)
        own_id = self._find_or_create(conn, client, plan.own, plan.rule, now, touch=True)
        if plan.role is not None:
            conn.execute(
                update(RuntimeSession)
                .where(RuntimeSession.id == own_id, RuntimeSession.role.is_(None))
                .values(role=plan.role)
            )
        refused: str | None = None
        if plan.parent is not None:
            parent_id = self._find_or_create(conn, client, plan.parent, plan.rule, now, touch=False)
            refused = self._set_parent(conn, client.account, own_id, parent_id)
        return Resolution(own_id, self._parent_of(conn, own_id), plan.own, refused)

    def _find_or_create(
        self,
        conn: Connection,
        client: Client,
        key: SourceKey,
        rule: str,
        now: datetime,
        *,
        touch: bool,
    ) -> str:
        found = self._select_key(conn, client, key)
        if found is None:
            dialect_insert = (
                postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
            )
            statement = (
                dialect_insert(RuntimeSession)
                .values(
                    id=new_id(),
                    account=client.account,
                    principal=client.principal,
                    harness=client.harness,
                    source_type=key.source_type,
                    source_id=key.source_id,
                    rule=rule,
                    role=None,
                    parent_session_id=None,
                    first_seen_at=now,
                    last_seen_at=now,
                    closed_at=None,
                )
                .on_conflict_do_nothing(
                    index_elements=["account", "principal", "source_type", "source_id"]
                )
            )
            conn.execute(statement)
            found = self._select_key(conn, client, key)
            if found is None:  # cannot happen: the insert or its conflict left a row
                raise StoreError(f"session row for {key.source_type} vanished")
            return found
        if touch:
            self._touch(conn, found, now)
        return found

    def _select_key(self, conn: Connection, client: Client, key: SourceKey) -> str | None:
        return conn.execute(
            select(RuntimeSession.id).where(
                RuntimeSession.account == client.account,
                RuntimeSession.principal == client.principal,
                RuntimeSession.source_type == key.source_type,
                RuntimeSession.source_id == key.source_id,
            )
        ).scalar_one_or_none()

    def _touch(self, conn: Connection, session_id: str, now: datetime) -> None:
        conn.execute(
            update(RuntimeSession)
            .where(RuntimeSession.id == session_id, RuntimeSession.last_seen_at < now)
            .values(last_seen_at=now)
        )

    def _parent_of(self, conn: Connection, session_id: str) -> str | None:
        return conn.execute(
            select(RuntimeSession.parent_session_id).where(RuntimeSession.id == session_id)
        ).scalar_one_or_none()

    def _set_parent(
        self, conn: Connection, account: str, child_id: str, parent_id: str
    ) -> str | None:
        """Record `parent_id` as the parent of `child_id` if allowed; the refusal reason
        otherwise (None: recorded now or already so)."""
        if child_id == parent_id:
            return REFUSED_SELF
        current = self._parent_of(conn, child_id)
        if current is not None:
            return None if current == parent_id else REFUSED_REWRITE
        if conn.dialect.name == "postgresql":
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:k)"), {"k": _account_lock_key(account)}
            )
        chain = self._ancestors(conn, parent_id, limit=MAX_ANCESTORS + 1)
        if chain is None or child_id in chain:
            return REFUSED_CYCLE
        if len(chain) > MAX_ANCESTORS:
            return REFUSED_DEPTH
        result = conn.execute(
            update(RuntimeSession)
            .where(RuntimeSession.id == child_id, RuntimeSession.parent_session_id.is_(None))
            .values(parent_session_id=parent_id)
        )
        if result.rowcount == 1:
            return None
        # Someone set it between our read and our update.
        current = self._parent_of(conn, child_id)
        return None if current == parent_id else REFUSED_REWRITE

    def _source_row(self, conn: Connection, client: Client, now: datetime) -> tuple[str, SourceKey]:
        prefix = f"{client.harness}#"
        query = (
            select(
                RuntimeSession.id,
                RuntimeSession.source_id,
                RuntimeSession.last_seen_at,
                RuntimeSession.closed_at,
            )
            .where(
                RuntimeSession.account == client.account,
                RuntimeSession.principal == client.principal,
                RuntimeSession.source_type == "source",
                RuntimeSession.source_id.startswith(prefix, autoescape=True),
            )
            .order_by(RuntimeSession.first_seen_at.desc(), RuntimeSession.source_id.desc())
            .limit(1)
        )
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        latest = conn.execute(query).one_or_none()
        generation = 1
        if latest is not None:
            generation = int(latest.source_id[len(prefix) :]) + 1
            if latest.closed_at is None:
                if latest.last_seen_at >= now - self.inactivity:
                    self._touch(conn, latest.id, now)
                    return latest.id, SourceKey("source", latest.source_id)
                self._close(conn, latest.id, latest.last_seen_at + self.inactivity)
        key = source_key_for_principal(client, generation)
        return self._find_or_create(conn, client, key, "source", now, touch=True), key

    def _close(self, conn: Connection, session_id: str, when: datetime) -> None:
        conn.execute(
            update(RuntimeSession)
            .where(RuntimeSession.id == session_id, RuntimeSession.closed_at.is_(None))
            .values(closed_at=when)
        )

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
                self._close(conn, row.id, row.last_seen_at + self.inactivity)
        return len(rows)

    # -- lineage -------------------------------------------------------------------------

    def _ancestors(
        self, conn: Connection, session_id: str, *, limit: int = MAX_ANCESTORS
    ) -> tuple[str, ...] | None:
        """`session_id` itself, then its ancestors nearest first, at most `limit` hops;
        None when the chain loops."""
        chain = [session_id]
        current: str | None = session_id
        for _ in range(limit):
            current = self._parent_of(conn, current) if current is not None else None
            if current is None:
                break
            if current in chain:
                return None
            chain.append(current)
        return tuple(chain)

    def lineage(self, session_id: str) -> tuple[str, ...] | None:
        """The target's known ancestors, nearest first (at most 32), for the note scope;
        None when it has no parent on record or its chain loops."""
        with self.engine.connect() as conn:
            chain = self._ancestors(conn, session_id)
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

    def record_call(self, facts: CallFacts) -> str:
        call_id = new_id()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(Call).values(id=call_id, **_fields(facts)))
        except SQLAlchemyError as exc:
            raise StoreError(f"session store: {_reason(exc)}") from None
        return call_id

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


def _fields(facts: CallFacts) -> dict[str, Any]:
    return {name: getattr(facts, name) for name in CallFacts.__slots__}


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]

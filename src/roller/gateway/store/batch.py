"""The background writer's batch: call rows and session touches in one raw transaction.

`BatchWriter.of(engine, insert_sql, document_sql)` renders the batch's statements once
for the engine's dialect; `writer.write(rows, touches)` writes one batch (the call rows of
`roller.gateway.store.calls`, and `last_seen_at` touches) in one transaction on a raw
DB-API connection the writer keeps from the pool for its batches alone, and returns each
touched session's parent as it is now; `close()` hands that connection back. Rules
kept:
- The statements are SQLAlchemy's own for the same operations, rendered once (the call
  insert by `CallInsert`; the touch is `UPDATE … SET last_seen_at WHERE id AND
  last_seen_at < when`, its time through the column's own bind processor), so what is
  stored is what SQLAlchemy Core stores (`tests/gateway/test_call_insert.py`). What this
  saves is SQLAlchemy's per-transaction work (the `Connection`, its events, execution
  contexts and result objects) and, by keeping its connection, the pool's check-out and
  check-in (its reset's rollback) per batch: the batch runs on the store thread, but CPU
  anywhere in the process is CPU per request. Batches are written one at a time (the
  background writer awaits each), so the kept connection is never used by two threads
  at once.
- The rows go by one `executemany` of the insert, or, where the dialect has a document
  insert (PostgreSQL through psycopg: `CallInsert.document_sql`), as one JSON document
  (orjson; a psycopg JSON wrapper as the text psycopg's own dumper of the connection
  sends) to one statement: psycopg's `executemany` runs ~27 µs of Python a row (its
  pipeline, one Bind and Execute a row) and the server ~38, the document ~8 and ~27
  (`document_insert`). A batch with a value orjson
  cannot write (an integer past 64 bits, a type it does not know) takes `executemany`;
  `documents` counts the batches that went as one.
- SQLite begins the transaction `IMMEDIATE`, as every store transaction does
  (`roller.gateway.store.engine`); PostgreSQL's driver begins it with the first
  statement. Touches are written in session id order (one lock order for every writer).
- On SQLite a batch commits with `synchronous=NORMAL` (no fsync of the WAL at its
  commit: ~250 µs of CPU and ~3 ms of wall time a batch on the machine measured): the
  writer's kept connection is set to it once, and handed back to the pool at `FULL`,
  the engine's level for every other transaction (a connection that cannot take it is
  never reused).
  What this risks is a power loss (never a process crash: the WAL is in the kernel at
  commit) losing the last batches; what is lost is a suffix of the WAL's commits, so no
  earlier transaction (a session, a parent) is lost after a later one (a child), and a
  `FULL` commit after the batch (a resolution) syncs it too. The rows are on the tape:
  the crashed run's mark is still there at the next start, and crash recovery
  (`roller.gateway.recovery`) writes every exchange's missing row from it; touches are
  `last_seen_at` times the next request writes again. A clean stop closes the store
  (its last connection checkpoints the WAL, synced) before it removes the mark.
- A failure rolls the transaction back (a dropped connection, or one that cannot roll
  back, is invalidated, so the pool never hands it out again, and the next batch takes
  a fresh one); a transient one (a locked SQLite file, a deadlock or
  serialization failure, a dropped connection) is retried with the store's backoff, and
  any other, or the last, becomes a `StoreError` with the driver's first line only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import orjson
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from roller.gateway.store.engine import SQLITE_SYNCHRONOUS, StoreError
from roller.gateway.store.models import RuntimeSession

ATTEMPTS: Final = 4  # of a batch that fails transiently (as the store's transactions)
TRANSIENT_SQLSTATES: Final = frozenset({"40001", "40P01", "55P03"})  # serialization, deadlock, lock


class BatchWriter:
    """One dialect's batch statements, rendered once, the engine to run them on and the
    connection kept for them."""

    def __init__(
        self,
        engine: Engine,
        insert_sql: str,
        document_sql: str | None,  # the insert of a batch as one JSON document, or None
        touch_sql: str,
        parents_sql: str,  # `{marks}`: one placeholder per touched session
        mark: str,
        when: Any,  # the `last_seen_at` bind processor (None: the value as it is)
        begin: str | None,  # the statement that opens a transaction, where the driver does not
        # The kept connection's durability level for batches, and the engine's, restored
        # before it goes back to the pool.
        before: tuple[str, ...] = (),
        after: tuple[str, ...] = (),
    ) -> None:
        self.engine = engine
        self.insert_sql = insert_sql
        self.document_sql = document_sql
        self.touch_sql = touch_sql
        self.parents_sql = parents_sql
        self.mark = mark
        self.when = when
        self.begin = begin
        self.before = before
        self.after = after
        self._error: type[BaseException] = engine.dialect.loaded_dbapi.Error
        self._raw: Any = None  # the pool's connection, kept for batches
        self._cursor: Any = None
        self._json_text: Callable[[Any], str] = _no_json  # psycopg's JSON text, per connection
        self.documents = 0  # batches whose rows went as one JSON document

    @classmethod
    def of(cls, engine: Engine, insert_sql: str, document_sql: str | None = None) -> BatchWriter:
        dialect = engine.dialect
        quote = dialect.identifier_preparer.quote
        table = RuntimeSession.__table__
        name = dialect.identifier_preparer.format_table(table)
        mark = "?" if dialect.paramstyle == "qmark" else "%s"
        seen, ident, parent = quote("last_seen_at"), quote("id"), quote("parent_session_id")
        sqlite = dialect.name == "sqlite"
        return cls(
            engine=engine,
            insert_sql=insert_sql,
            document_sql=document_sql,
            touch_sql=(
                f"UPDATE {name} SET {seen}={mark} WHERE {name}.{ident} = {mark}"
                f" AND {name}.{seen} < {mark}"
            ),
            parents_sql=f"SELECT {ident}, {parent} FROM {name} WHERE {ident} IN ({{marks}})",
            mark=mark,
            when=table.c["last_seen_at"].type.dialect_impl(dialect).bind_processor(dialect),
            begin="BEGIN IMMEDIATE" if sqlite else None,
            before=("PRAGMA synchronous=NORMAL",) if sqlite else (),
            after=(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}",) if sqlite else (),
        )

    def write(
        self, rows: Sequence[tuple[Any, ...]], touches: Mapping[str, datetime]
    ) -> dict[str, str | None]:
        """The batch in one transaction, retried while it fails transiently."""
        touched = sorted(touches)  # one lock order
        stamp = self.when or (lambda value: value)
        updates = [(stamp(touches[s]), s, stamp(touches[s])) for s in touched]
        # The driver reads a row by index: an exact tuple's are read in C, a NamedTuple's
        # through its `__getitem__` (~1.4k instructions a value in SQLite's module).
        values = [row if row.__class__ is tuple else tuple(row) for row in rows]
        for attempt in range(ATTEMPTS):
            try:
                return self._transaction(values, updates, touched)
            except _Retry as retry:
                if attempt + 1 == ATTEMPTS:
                    raise StoreError(f"session store: {retry.reason}") from None
                time.sleep(0.005 * 4**attempt)
        raise AssertionError("unreachable")  # the loop returns or raises

    def close(self) -> None:
        """Hand the kept connection back to the pool, at the engine's own settings."""
        raw, cursor = self._raw, self._cursor
        self._raw = self._cursor = None
        if raw is None:
            return
        try:
            raw.rollback()  # (none is open between batches: a no-op)
            for statement in self.after:
                cursor.execute(statement)
        except self._error as exc:
            raw.invalidate(exc)  # one that cannot take them is never reused
        raw.close()

    def _connection(self) -> tuple[Any, Any]:
        """The kept connection and its cursor (a fresh one, set for batches, if none);
        none to be had (a server away, a file that would not open) is a transient failure."""
        if self._raw is None:
            try:
                raw = self.engine.raw_connection()
            except SQLAlchemyError as exc:
                raise _Retry(_reason(exc)) from None
            try:
                cursor = raw.cursor()
                for statement in self.before:
                    cursor.execute(statement)
            except self._error as exc:
                raw.invalidate(exc)
                raw.close()
                raise _Retry(_reason(exc)) from None
            self._raw, self._cursor = raw, cursor
            if self.document_sql is not None:
                self._json_text = json_text_of(raw.dbapi_connection)
        return self._raw, self._cursor

    def _transaction(
        self,
        rows: Sequence[tuple[Any, ...]],
        updates: list[tuple[Any, str, Any]],
        touched: list[str],
    ) -> dict[str, str | None]:
        dialect = self.engine.dialect
        error = self._error
        raw, cursor = self._connection()
        try:
            if self.begin is not None:
                cursor.execute(self.begin)
            document = None if self.document_sql is None else self.document(rows)
            if document is not None:
                cursor.execute(self.document_sql, (document,))
            elif rows:
                cursor.executemany(self.insert_sql, rows)
            parents: dict[str, str | None] = {}
            if updates:
                cursor.executemany(self.touch_sql, updates)
                cursor.execute(
                    self.parents_sql.format(marks=", ".join(self.mark for _ in touched)),
                    touched,
                )
                found = {str(sid): parent for sid, parent in cursor.fetchall()}
                parents = {sid: found.get(sid) for sid in touched}
            raw.commit()
            self.documents += document is not None
            return parents
        except error as exc:
            dropped = dialect.is_disconnect(exc, raw.dbapi_connection, cursor)  # type: ignore[arg-type]
            if not _rolled_back(raw, dropped, error):
                self._raw = self._cursor = None
                raw.invalidate(exc)  # never reused: the next batch takes a fresh one
                raw.close()
            if dropped or _transient(exc):
                raise _Retry(_reason(exc)) from None
            raise StoreError(f"session store: {_reason(exc)}") from None

    def document(self, rows: Sequence[tuple[Any, ...]]) -> str | None:
        """The rows as one JSON document for `document_sql` (None: no rows, or a value
        orjson cannot write: an integer past 64 bits, a type it does not know — the
        batch then takes `executemany`, which stores the same)."""
        if not rows:
            return None
        try:
            return orjson.dumps(rows, default=self._json_text).decode()
        except TypeError:  # (orjson.JSONEncodeError is one)
            return None


def json_text_of(connection: Any) -> Callable[[Any], str]:
    """For orjson's `default`: a psycopg JSON wrapper's text, exactly what psycopg's own
    dumper of the connection sends for it (its `dumps`, else the connection's); any other
    value is refused (TypeError)."""
    from psycopg.adapt import PyFormat
    from psycopg.types.json import Json, Jsonb

    dumpers = {
        kind: connection.adapters.get_dumper(kind, PyFormat.TEXT)(kind, connection)
        for kind in (Json, Jsonb)
    }

    def text(value: Any) -> str:
        dumper = dumpers.get(value.__class__)
        if dumper is None:
            raise TypeError(f"{value.__class__.__name__} is not written in a JSON document")
        return bytes(dumper.dump(value)).decode()

    return text


def _no_json(value: Any) -> str:
    raise TypeError(f"{value.__class__.__name__} is not written in a JSON document")


def _rolled_back(raw: Any, dropped: bool, error: type[BaseException]) -> bool:
    """Whether a failed batch's connection rolled back and may serve the next one (a
    connection that dropped never does)."""
    if dropped:
        return False
    try:
        raw.rollback()
    except error:
        return False
    return True


class _Retry(Exception):
    """A transient failure of one attempt (its driver reason)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _transient(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in TRANSIENT_SQLSTATES:
        return True
    return "database is locked" in str(exc)


def _reason(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

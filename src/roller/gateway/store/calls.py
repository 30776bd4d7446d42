"""Call rows: what the gateway knows of an ended exchange, and their batched insert.

`CallFacts` is one exchange's row as the gateway builds it (the end hook, crash recovery);
`CallInsert.of(dialect)` is the `call` table's insert for one backend, built once, and
`insert.rows(facts)` the DB-API parameter tuples of a batch, for one `executemany`;
on PostgreSQL through psycopg also `document_sql` (`document_insert`), the same insert
taking the batch's tuples as one JSON document.
Rules kept:
- One row per exchange: the insert is `ON CONFLICT (tape_dir, exchange_id) DO NOTHING`,
  so writing a batch that already landed again is a no-op.
- Every value is made storable first (`roller.gateway.store.values`, over column shapes
  read off the table once): lone surrogates and NULs escaped, over-long strings cut, each
  change flagged in the row's `flags`.
- Values reach the driver exactly as SQLAlchemy's own insert would send them: each
  column's bind processor is the dialect's own (`dialect_impl(...).bind_processor`), so
  a JSON column is serialized, a datetime converted (`UTCDateTime`: naive UTC text on
  SQLite) and a boolean mapped the same way; `tests/gateway/test_call_insert.py` compares
  the stored rows with SQLAlchemy Core's insert, column by column, on both backends.
  What this saves is SQLAlchemy's per-row statement work: the batch is a list of tuples
  in column order (no per-row dict, the facts read by one `attrgetter`, a processor not
  called on a NULL: what it makes of one is taken once), sent with one `executemany` of
  one statement on the raw DB-API connection (`roller.gateway.store.batch`).
- A row's identity summary is, nearly always, the very object the gateway keeps per
  evidence for every request of a session (`roller.gateway.identities`: shared, never
  mutated), so its serialized form is kept per object (`CallInsert.identities`, held
  with the object, so an id is never reused while kept), not serialized per row.
- A time column on SQLite is bound as the dialect's processor binds it, through the
  type's own `process_bind_param` (`UTCDateTime`: naive UTC), then written by
  `datetime.isoformat(" ", "microseconds")` where the dialect's `DATETIME` keeps its
  default storage format, the same text (`%(year)04d-…%(microsecond)06d`) without a
  dict and a `%` format per value (`_sqlite_time`).
- Row ids are time-ordered UUIDv7s (`roller.gateway.store.ids.call_row_id`): no
  system call and no `UUID` object per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Any, Final, NamedTuple

from sqlalchemy import Dialect, TypeDecorator
from sqlalchemy.dialects.sqlite import DATETIME as SQLITE_DATETIME

from roller.gateway.store.ids import call_row_id
from roller.gateway.store.models import Call
from roller.gateway.store.values import column_shapes, storable_values


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
    flags: tuple[str, ...] = ()  # what the gateway knows it stored otherwise (e.g. no body)


_MAX_KEPT_IDENTITIES: Final = 4096

# The insert's columns: a request's own values first, then those its session's requests
# share (`roller.gateway.store.row_parts` binds those once per session and model).
REQUEST_COLUMNS: Final = (
    "id",
    "exchange_id",
    "method",
    "path",
    "outcome",
    "client_status",
    "upstream_status",
    "execution_status",
    "response_capture_status",
    "error_code",
    "started_at",
    "ended_at",
    "flags",
)
SESSION_COLUMNS: Final = (
    "tape_dir",
    "session_id",
    "account",
    "principal",
    "family",
    "protocol",
    "model",
    "participant_unknown",
    "identity",
)
COLUMNS: Final = (*REQUEST_COLUMNS, *SESSION_COLUMNS)
# The facts made storable in their own order (`flags` follows them: the facts' own, then
# those `storable_values` adds, in this order).
FACT_COLUMNS: Final = tuple(name for name in CallFacts.__slots__ if name != "flags")
_SHAPES: Final = column_shapes(Call.__table__, FACT_COLUMNS)  # type: ignore[arg-type]
_FACTS: Final = attrgetter(*FACT_COLUMNS)  # the facts in that order, one C call
# Where each of `COLUMNS` after `id` is among the stored facts (`flags` last).
_FROM_FACTS: Final = tuple(
    len(FACT_COLUMNS) if name == "flags" else FACT_COLUMNS.index(name) for name in COLUMNS[1:]
)


class CallRow(NamedTuple):
    """One `call` row as the driver takes it: `COLUMNS`' values in order, each made
    storable and bound by its column's processor (the writer queues these)."""

    id: str
    exchange_id: str
    method: str
    path: str
    outcome: str
    client_status: int | None
    upstream_status: int | None
    execution_status: str
    response_capture_status: str
    error_code: str | None
    started_at: Any
    ended_at: Any
    flags: Any
    tape_dir: str
    session_id: str | None
    account: str | None
    principal: str | None
    family: str | None
    protocol: str | None
    model: str | None
    participant_unknown: Any
    identity: Any


assert CallRow._fields == COLUMNS  # the driver takes a row's values in the insert's order

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class CallInsert:
    """The `call` insert of one dialect and its columns' bind processors, in order."""

    sql: str
    processors: tuple[_Processor, ...]
    # The same insert taking a whole batch as one JSON document (PostgreSQL through
    # psycopg; None elsewhere): see `document_insert`.
    document_sql: str | None = None
    # id(summary) -> (the summary, its bound form): see the module docstring.
    identities: dict[int, tuple[Any, Any]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, dialect: Dialect) -> CallInsert:
        table = Call.__table__
        quote = dialect.identifier_preparer.quote
        mark = "?" if dialect.paramstyle == "qmark" else "%s"
        sql = (
            f"INSERT INTO {dialect.identifier_preparer.format_table(table)} "
            f"({', '.join(quote(name) for name in COLUMNS)}) "
            f"VALUES ({', '.join(mark for _ in COLUMNS)}) "
            f"ON CONFLICT ({quote('tape_dir')}, {quote('exchange_id')}) DO NOTHING"
        )
        document_sql = (
            document_insert(dialect)
            if dialect.name == "postgresql" and dialect.driver == "psycopg"
            else None
        )
        processors = tuple(
            _sqlite_time(table.c[name].type, dialect)
            or table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in COLUMNS
        )
        return cls(sql, processors, document_sql)

    def rows(self, calls: Sequence[CallFacts]) -> list[CallRow]:
        """The batch's rows: one per call, in `COLUMNS` order."""
        # (index, processor, what it makes of a NULL), the identity's apart
        processed = [
            (i, p, p(None))
            for i, p in enumerate(self.processors)
            if p is not None and i != _IDENTITY
        ]
        identity = self.processors[_IDENTITY]
        identity_null = None if identity is None else identity(None)
        out = []
        for facts in calls:
            row = call_values(facts)
            for i, process, null in processed:
                value = row[i]
                row[i] = null if value is None else process(value)
            if identity is not None:
                value = row[_IDENTITY]
                row[_IDENTITY] = identity_null if value is None else self.identity(value)
            out.append(CallRow._make(row))
        return out

    def identity(self, summary: Any) -> Any:
        """A summary's bound form, kept per object (see the module docstring)."""
        kept = self.identities.get(id(summary))
        if kept is not None and kept[0] is summary:
            return kept[1]
        process = self.processors[_IDENTITY]
        bound = summary if process is None else process(summary)
        if len(self.identities) >= _MAX_KEPT_IDENTITIES:
            self.identities.clear()
        self.identities[id(summary)] = (summary, bound)
        return bound


_IDENTITY: Final = COLUMNS.index("identity")
# The PostgreSQL type each column's text is cast to in `document_insert`, by the column
# type's class: the type a parameter of that column is cast to, never a length (a cast to
# `varchar(n)` would cut; the insert's assignment refuses an over-long value, as it does
# a parameter's).
_DOCUMENT_CASTS: Final[dict[str, str]] = {
    "String": "text",
    "Text": "text",
    "Integer": "integer",
    "Boolean": "boolean",
    "JSON": "json",
    "UTCDateTime": "timestamptz",
}


def document_insert(dialect: Dialect) -> str:
    """The `call` insert taking a batch as one parameter, a JSON array of rows (each an
    array of `COLUMNS`' values as the driver would get them, texts for times and JSON
    values): each row's values read back as text (`->>`, a string's text exactly as
    sent) and cast to its column's type, which is what the server does with psycopg's
    untyped text parameters; the same `ON CONFLICT … DO NOTHING`. One statement a batch
    instead of one per row: a row costs ~8 µs of the gateway's CPU (orjson makes the
    document) and ~27 of the server's, where psycopg's `executemany` costs ~27 and ~38.
    `jsonb`, parsed once: over `json` each `->>` scans the row's text again (the
    server's CPU ~80 µs a row)."""
    table = Call.__table__
    quote = dialect.identifier_preparer.quote
    casts = []
    for i, name in enumerate(COLUMNS):
        kind = type(table.c[name].type).__name__
        if kind not in _DOCUMENT_CASTS:  # a new column type: say which, never guess
            raise TypeError(f"call.{name}: no document cast for a {kind} column")
        casts.append(f"(e.v->>{i})::{_DOCUMENT_CASTS[kind]}")
    return (
        f"INSERT INTO {dialect.identifier_preparer.format_table(table)} "
        f"({', '.join(quote(name) for name in COLUMNS)}) "
        f"SELECT {', '.join(casts)} FROM jsonb_array_elements(%s::jsonb) AS e(v) "
        f"ON CONFLICT ({quote('tape_dir')}, {quote('exchange_id')}) DO NOTHING"
    )


# SQLite's `DATETIME` text, the one `datetime.isoformat(" ", "microseconds")` writes.
_SQLITE_TIME_FORMAT: Final = (
    "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d"
)


def sqlite_time_text(column_type: Any, dialect: Dialect) -> bool:
    """Whether `column_type` is a `TypeDecorator` over SQLite's `DATETIME` in its default
    storage format on `dialect`: then its stored text is `isoformat(" ", "microseconds")`
    of the naive UTC time the decorator binds."""
    if dialect.name != "sqlite" or not isinstance(column_type, TypeDecorator):
        return False
    impl = column_type.impl_instance.dialect_impl(dialect)
    return isinstance(impl, SQLITE_DATETIME) and impl._storage_format == _SQLITE_TIME_FORMAT


def _sqlite_time(column_type: Any, dialect: Dialect) -> _Processor:
    """Such a column's processor, bound as SQLAlchemy binds it (module docstring); None
    for any other column or dialect."""
    if not sqlite_time_text(column_type, dialect):
        return None
    impl = column_type.impl_instance.dialect_impl(dialect)
    decorate = column_type.process_bind_param

    def process(value: Any) -> Any:
        bound = decorate(value, dialect)
        if bound is None:
            return None
        if bound.__class__ is not datetime:  # a date, a subclass: the dialect's own
            return impl.bind_processor(dialect)(bound)
        return bound.isoformat(" ", "microseconds")

    return process


def call_values(facts: CallFacts) -> list[Any]:
    """One call's values in `COLUMNS` order, made storable (a fresh row id first)."""
    stored, flags = storable_values(_SHAPES, _FACTS(facts))
    stored.append([*facts.flags, *flags] or None)
    return [call_row_id(), *map(stored.__getitem__, _FROM_FACTS)]

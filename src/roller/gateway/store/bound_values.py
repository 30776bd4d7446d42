"""How a call row's times and JSON values reach the driver on the gateway's hot path.

`Binders.of(insert, dialect)` gives, per dialect, `time(ns)` (a time in nanoseconds since
the epoch, stored to the microsecond below, as `datetime.now` reads the clock) and
`json(value)` (a JSON column's value), bound so that what is stored is what the columns'
own processors store (`roller.gateway.store.calls.CallInsert`; the stored rows are
compared in `tests/gateway/test_row_parts.py`), with less work per row:
- SQLite, where the `DATETIME` column keeps the dialect's default storage format: the
  processor's text (`isoformat(" ", "microseconds")` of naive UTC), its date and time
  made once per second (`text_times`); JSON through the column's processor (text).
- PostgreSQL through psycopg: psycopg sends a `str` with no type (unknown), which the
  server casts to the column's type, so a time is sent as text with its `+00:00` offset
  (the same instant) and a JSON value as the text psycopg's own JSON dumper would send
  (the dialect's serializer, `json.dumps` unless configured): no `json.dumps` in
  psycopg's Python dumper per row and value (two a row, most of a PostgreSQL row's
  client-side CPU), no datetime object.
- Any other dialect: the columns' processors over a UTC datetime and the value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Dialect

from roller.gateway.store.calls import COLUMNS, CallInsert, sqlite_time_text
from roller.gateway.store.models import Call

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_SECONDS: Final = 8  # seconds whose time text is kept


def utc_from_ns(ns: int) -> datetime:
    """The aware UTC datetime of `ns` nanoseconds since the epoch, to the microsecond
    below (exact: no float)."""
    return _EPOCH + timedelta(0, 0, ns // 1000)


def text_times(offset: str = "") -> Callable[[int], str]:
    """A time in nanoseconds as `YYYY-MM-DD HH:MM:SS.ffffff` UTC text, then `offset`: its
    date and time made once per second (the rows of requests in flight fall in a few
    seconds: the last `_SECONDS` are kept). A closure: cheaper to call than an
    instance's `__call__`."""
    prefixes: dict[int, str] = {}

    def text(ns: int) -> str:
        second, micro = divmod(ns // 1000, 1_000_000)
        prefix = prefixes.get(second)
        if prefix is None:
            whole = (_EPOCH + timedelta(0, second)).replace(tzinfo=None)
            prefix = whole.isoformat(" ", "seconds") + "."
            if len(prefixes) >= _SECONDS:
                prefixes.clear()
            prefixes[second] = prefix
        return prefix + "%06d" % micro + offset  # noqa: UP031 - cheaper than a format spec

    return text


@dataclass(frozen=True, slots=True)
class Binders:
    """One dialect's binders of a row's times and JSON values (module docstring)."""

    time: Callable[[int], Any]
    json: Callable[[Any], Any]  # a JSON column's value, None included

    @classmethod
    def of(cls, insert: CallInsert, dialect: Dialect) -> Binders:
        processors = dict(zip(COLUMNS, insert.processors, strict=True))
        if dialect.name == "postgresql" and dialect.driver == "psycopg":
            return cls(
                text_times("+00:00"), getattr(dialect, "_json_serializer", None) or json.dumps
            )
        process_json = processors["identity"]
        json_value = process_json or (lambda value: value)
        if sqlite_time_text(Call.__table__.c["started_at"].type, dialect):
            return cls(text_times(), json_value)
        started = processors["started_at"]
        if started is None:
            return cls(utc_from_ns, json_value)
        return cls(lambda ns: started(utc_from_ns(ns)), json_value)

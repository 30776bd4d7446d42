"""A call row in two parts: what a session's requests share, bound once; the rest per row.

`RowMaker.of(insert, dialect)` (one per store); `maker.part(...)` binds the values every
request of one session and model shares (`SESSION_COLUMNS`: tape, session, who, family,
protocol, model, identity summary) once, made storable and through their columns'
processors, into a `SessionPart`; `maker.row(part, ...)` finishes one exchange's
`CallRow` from the values that change per request. What this saves is Python per column
per row (in-process, a row cost the gateway more than its SQLite insert did). Rules
kept:
- The row is the one `CallInsert.rows` makes of the same facts (`call_values`, the
  columns' own bind processors): `tests/gateway/test_row_parts.py` compares the two on
  both backends. The per-request strings (exchange id, method, path, error code,
  outcome, statuses) are checked in one pass (joined, ASCII without a NUL, within their
  columns' lengths, read off the table); a row where any of them, or its part, would be
  stored otherwise than given (escaped, cut: `roller.gateway.store.values`) is made by
  `CallInsert.rows` from the facts, which flags it, so a flag is never lost.
- Times are taken as nanoseconds since the epoch and stored to the microsecond below
  (as `datetime.now` reads the clock); times and JSON values are bound per dialect by
  `roller.gateway.store.bound_values` (SQLite's and PostgreSQL's text, made cheaply).
- The fast path applies to a dialect whose processors leave these columns' values as
  they are (none for strings and integers; SQLite and PostgreSQL alike); any other
  dialect gets every row from `CallInsert.rows`.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Dialect

from roller.gateway.store.bound_values import Binders, utc_from_ns
from roller.gateway.store.calls import COLUMNS, SESSION_COLUMNS, CallFacts, CallInsert, CallRow
from roller.gateway.store.ids import call_row_id
from roller.gateway.store.models import Call
from roller.gateway.store.values import column_shapes

_new_row = tuple.__new__  # a CallRow from all its values, without NamedTuple's Python __new__
_SESSION_SHAPES: Final = column_shapes(Call.__table__, SESSION_COLUMNS)  # type: ignore[arg-type]
# Columns whose values go to the driver as they are on the fast path (the rest: the
# row id, the times and JSON values, `bound_values`, and the boolean's processor).
_AS_IS: Final = tuple(
    c
    for c in COLUMNS
    if c not in ("id", "started_at", "ended_at", "flags", "participant_unknown", "identity")
)
_MAX_WORDS: Final = 256  # outcome and status values known storable (a closed set)
_WORD_COLUMNS: Final = ("outcome", "execution_status", "response_capture_status")


class SessionPart:
    """The `SESSION_COLUMNS` values of one session's rows: as given (`raw`) and bound for
    the driver (`values`; None when one of them is stored otherwise than given, so every
    row of the part goes the general way, which flags it). Built by `RowMaker.part`."""

    __slots__ = ("raw", "values")

    def __init__(self, raw: tuple[Any, ...], values: tuple[Any, ...] | None) -> None:
        self.raw = raw
        self.values = values


class RowMaker:
    """One store's call rows, made from a session part and the request's own values."""

    def __init__(self, insert: CallInsert, dialect: Dialect) -> None:
        self.insert = insert
        processors = dict(zip(COLUMNS, insert.processors, strict=True))
        self.fast = all(processors[name] is None for name in _AS_IS)
        binders = Binders.of(insert, dialect)
        self._time, self._json = binders.time, binders.json
        self._no_flags = binders.json(None)
        self._over_limit = binders.json(["response_over_limit"])
        self._participant = processors["participant_unknown"]
        shapes = column_shapes(Call.__table__, COLUMNS)  # type: ignore[arg-type]
        lengths = {c.name: c.length for c in shapes.columns}
        self._method_len = lengths["method"] or 1 << 62
        self._exchange_len = lengths["exchange_id"] or 1 << 62
        self._error_len = lengths["error_code"] or 1 << 62
        self._word_lens = {name: lengths[name] or 1 << 62 for name in _WORD_COLUMNS}
        self._words: set[tuple[str, ...]] = set()  # (outcome, statuses) known storable

    def part(
        self,
        tape_dir: str,
        session_id: str | None,
        account: str | None,
        principal: str | None,
        family: str | None,
        protocol: str | None,
        model: str | None,
        participant_unknown: bool,
        identity: dict[str, Any] | None,
    ) -> SessionPart:
        """The session side of a session's rows, checked and bound once."""
        raw: tuple[Any, ...] = (tape_dir, session_id, account, principal, family, protocol)
        raw += (model, participant_unknown, identity)
        if not self.fast or not _SESSION_SHAPES.plain(raw):
            return SessionPart(raw, None)
        process = self._participant
        bound = participant_unknown if process is None else process(participant_unknown)
        return SessionPart(raw, (*raw[:7], bound, self._json(identity)))

    def row(
        self,
        part: SessionPart,
        exchange_id: str,
        method: str,
        path: str,
        outcome: str,
        client_status: int | None,
        upstream_status: int | None,
        statuses: tuple[str, str],
        error_code: str | None,
        started_ns: int,
        ended_ns: int,
        over_limit: bool,
    ) -> CallRow:
        """One exchange's row (the general way when something must be stored otherwise)."""
        values = part.values
        text = method + path + exchange_id
        if error_code is not None:
            text += error_code
        if (
            values is None
            or not text.isascii()
            or "\x00" in text
            or len(method) > self._method_len
            or len(exchange_id) > self._exchange_len
            or (error_code is not None and len(error_code) > self._error_len)
            or not self._storable_words(outcome, statuses)
        ):
            request: tuple[Any, ...] = (exchange_id, method, path, outcome, client_status)
            request += (upstream_status, statuses, error_code, started_ns, ended_ns)
            return self._general(part, request, over_limit)
        time = self._time
        request = (
            call_row_id(ended_ns // 1_000_000),
            exchange_id,
            method,
            path,
            outcome,
            client_status,
            upstream_status,
            *statuses,
            error_code,
            time(started_ns),
            time(ended_ns),
            self._over_limit if over_limit else self._no_flags,
        )
        return _new_row(CallRow, request + values)

    def _storable_words(self, outcome: str, statuses: tuple[str, str]) -> bool:
        """Whether the outcome and statuses (values of a closed set) are stored as given."""
        words = (outcome, *statuses)
        if words in self._words:
            return True
        for name, value in zip(_WORD_COLUMNS, words, strict=True):
            if not (
                value.isascii() and "\x00" not in value and len(value) <= self._word_lens[name]
            ):
                return False
        if len(self._words) < _MAX_WORDS:
            self._words.add(words)
        return True

    def _general(self, part: SessionPart, request: tuple[Any, ...], over_limit: bool) -> CallRow:
        """The row `CallInsert.rows` makes of the same facts (`request`: `row`'s own
        arguments after the part, in order, but `over_limit`)."""
        exchange_id, method, path, outcome, client, upstream, statuses, error, started, ended = (
            request
        )
        facts = CallFacts(
            **dict(zip(SESSION_COLUMNS, part.raw, strict=True)),
            exchange_id=exchange_id,
            method=method,
            path=path,
            outcome=outcome,
            client_status=client,
            upstream_status=upstream,
            execution_status=statuses[0],
            response_capture_status=statuses[1],
            error_code=error,
            started_at=utc_from_ns(started),
            ended_at=utc_from_ns(ended),
            flags=("response_over_limit",) if over_limit else (),
        )
        return self.insert.rows([facts])[0]

"""Values as a store can hold them: the one place a row's strings are made storable.

A request can carry strings no backend stores as they are: a lone surrogate (from JSON's
`"\\ud800"`, or header bytes that were not UTF-8; neither SQLite nor PostgreSQL takes
one), a NUL (PostgreSQL text refuses it), or a value longer than its column
(PostgreSQL refuses a method of 11 characters in `String(10)`). Losing the row for that
would lose the record of a billed call, so every string of a row goes through
`storable_values` first. Rules kept:
- A lone surrogate is written as its backslash escape (`\\ud800`), a NUL as `\\x00`;
  the same on every backend, so the two stores hold the same rows.
- A string longer than its column (`String(n)`) is cut to `n` characters.
- What was changed is named in the row's flags, `escaped:<column>` and
  `truncated:<column>`, so nobody mistakes a stored value for the one sent.
- Strings inside JSON columns are escaped the same way (and flagged); they are small,
  built by the gateway, and never cut.
- Column lengths come from the table itself (`column_shapes`, read once per table by a
  caller that writes many rows): nothing here restates the schema.
- Nearly every row needs no change: `RowShape.plain` tells so in one pass over the row
  (its strings joined once, lengths compared, each JSON value checked by one orjson
  call); only a row it cannot clear goes column by column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import JSON, String, Table


def storable_text(value: str) -> tuple[str, bool]:
    """`value` with lone surrogates and NULs escaped, and whether anything was."""
    if "\x00" not in value:
        if value.isascii():  # nearly every value: no surrogate possible (~20x cheaper)
            return value, False
        try:
            value.encode("utf-8")
            return value, False
        except UnicodeEncodeError:
            pass
    escaped = value.replace("\x00", "\\x00").encode("utf-8", "backslashreplace")
    return escaped.decode("utf-8"), True


def _storable_json(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_changed = storable_text(str(key))
            out[new_key], item_changed = _storable_json(item)
            changed = changed or key_changed or item_changed
        return out, changed
    if isinstance(value, list | tuple):
        items = [_storable_json(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    return value, False


@dataclass(frozen=True, slots=True)
class ColumnShape:
    """What `storable_values` needs of one column, read off the table once."""

    name: str
    length: int | None  # a `String(n)` column's n
    json: bool


@dataclass(frozen=True, slots=True)
class RowShape:
    """The shapes of a row's columns, in order, with where its bounded and JSON columns
    are (derived once from the shapes)."""

    columns: tuple[ColumnShape, ...]
    bounded: tuple[tuple[int, int], ...]  # (index, length) of each `String(n)` column
    json: tuple[int, ...]

    @classmethod
    def of(cls, columns: Sequence[ColumnShape]) -> RowShape:
        return cls(
            tuple(columns),
            tuple((i, c.length) for i, c in enumerate(columns) if c.length is not None),
            tuple(i for i, c in enumerate(columns) if c.json),
        )

    def plain(self, values: Sequence[Any]) -> bool:
        """Whether no value of the row needs a change (the column-by-column rules would
        leave every one as it is): its strings ASCII without a NUL, none over its
        column's length, every JSON value plain."""
        joined = "".join([v for v in values if v.__class__ is str])
        if not joined.isascii() or "\x00" in joined:
            return False
        for i, length in self.bounded:
            value = values[i]
            if value.__class__ is str and len(value) > length:
                return False
        return all(values[i] is None or _plain_json(values[i]) for i in self.json)


def column_shapes(table: Table, names: Sequence[str]) -> RowShape:
    """The shapes of `table`'s columns `names`, in that order."""
    shapes = []
    for name in names:
        column_type = table.c[name].type
        length = column_type.length if isinstance(column_type, String) else None
        shapes.append(ColumnShape(name, length, isinstance(column_type, JSON)))
    return RowShape.of(shapes)


def storable_values(shape: RowShape, values: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """`values` (one per column of `shape`) made storable, and the flags saying how."""
    flags: list[str] = []
    out = list(values)
    if shape.plain(values):
        return out, flags
    for i, (column, value) in enumerate(zip(shape.columns, values, strict=True)):
        if value is None or (value.__class__ is not str and not column.json):
            continue
        if value.__class__ is str and _plain(value, column.length):
            continue  # nearly every string: nothing to escape or cut
        if column.json and _plain_json(value):
            continue
        out[i] = _storable_value(column, value, flags)
    return out, flags


def _plain(text: str, length: int | None) -> bool:
    return text.isascii() and "\x00" not in text and (length is None or len(text) <= length)


def _plain_json(value: Any) -> bool:
    """Whether a JSON value's strings are all ASCII without a NUL (nothing to escape),
    told by orjson in one call: it escapes a NUL as `\\u0000`, writes any other
    character as UTF-8, and refuses a lone surrogate or a non-string key (then the
    value goes the slow way, which handles both)."""
    try:
        text = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return False
    return text.isascii() and b"\\u0000" not in text


def _storable_value(column: ColumnShape, value: Any, flags: list[str]) -> Any:
    if isinstance(value, str):
        text, escaped = storable_text(value)
        if escaped:
            flags.append(f"escaped:{column.name}")
        if column.length is not None and len(text) > column.length:
            flags.append(f"truncated:{column.name}")
            return text[: column.length]
        return text
    if column.json and value is not None:
        stored, escaped = _storable_json(value)
        if escaped:
            flags.append(f"escaped:{column.name}")
        return stored
    return value

"""Values as a store can hold them: the one place a row's strings are made storable.

A request can carry strings no backend stores as they are: a lone surrogate (from JSON's
`"\\ud800"`, or header bytes that were not UTF-8; neither SQLite nor PostgreSQL takes
one), a NUL (PostgreSQL text refuses it), or a value longer than its column
(PostgreSQL refuses a method of 11 characters in `String(10)`). Losing the row for that
would lose the record of a billed call, so every string of a row goes through
`storable_row` first. Rules kept:
- A lone surrogate is written as its backslash escape (`\\ud800`), a NUL as `\\x00`;
  the same on every backend, so the two stores hold the same rows.
- A string longer than its column (`String(n)`) is cut to `n` characters.
- What was changed is named in the row's flags, `escaped:<column>` and
  `truncated:<column>`, so nobody mistakes a stored value for the one sent.
- Strings inside JSON columns are escaped the same way (and flagged); they are small,
  built by the gateway, and never cut.
- Column lengths come from the table itself: nothing here restates the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import JSON, String, Table


def storable_text(value: str) -> tuple[str, bool]:
    """`value` with lone surrogates and NULs escaped, and whether anything was."""
    if "\x00" not in value:
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


def storable_row(table: Table, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`values` (column -> value) made storable in `table`, and the flags saying how."""
    out: dict[str, Any] = {}
    flags: list[str] = []
    for name, given in values.items():
        out[name] = _storable_value(table, name, given, flags)
    return out, flags


def _storable_value(table: Table, name: str, value: Any, flags: list[str]) -> Any:
    column_type = table.c[name].type
    if isinstance(value, str):
        text, escaped = storable_text(value)
        if escaped:
            flags.append(f"escaped:{name}")
        length = column_type.length if isinstance(column_type, String) else None
        if length is not None and len(text) > length:
            flags.append(f"truncated:{name}")
            return text[:length]
        return text
    if isinstance(column_type, JSON) and value is not None:
        stored, escaped = _storable_json(value)
        if escaped:
            flags.append(f"escaped:{name}")
        return stored
    return value

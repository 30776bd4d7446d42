"""Text a record can hold: Unicode with no lone surrogate.

A record is UTF-8 JSON, and neither pydantic's writer nor a strict JSON reader (pydantic's
own, orjson) takes a lone surrogate. Yet the wire can hand one over, quite legally from
Python's point of view: a header value that is not UTF-8 is held as lone surrogates
(surrogateescape), and a JSON body or SSE event may escape one (`"\\ud800"`), which
`json.loads` reads. Such text must not abort finalize (it did: a traceback, and the
capture lost), nor be dropped: `held` replaces each lone surrogate with U+FFFD in the
record, the caller adds a `text_not_unicode` capture error saying where, and the exact
bytes stay on the retained tape (the capture is then not complete, so raw/ is kept).

A paired escape (`"\\ud83d\\ude00"`) is one code point in Python and is kept as it is.
`held` returns the very object it was given when nothing needed replacing, so the common
case allocates nothing. `held_at` is the walk itself, also over dataclasses, naming the
fields where it replaced something (native-log records: `harnesses.native_capture`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import orjson

from roller.capture.tape import RequestMeta, ResponseMeta, TapeExchange

_LONE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

T = TypeVar("T")


def held_str(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (`text` itself when none)."""
    if text.isascii() or _LONE.search(text) is None:
        return text
    return _LONE.sub(REPLACEMENT, text)


def held(value: T) -> T:
    """`value` with every lone surrogate replaced by U+FFFD; the same object when there
    was none (what `held_at` walks)."""
    try:  # orjson refuses a lone surrogate: its C walk answers the common case
        orjson.dumps(value)
        return value
    except (orjson.JSONEncodeError, TypeError):  # a surrogate, an int past 64 bits, a set
        return held_at(value, "", [])


def held_at(value: T, where: str, places: list[str]) -> T:
    """`value` held — strings, and dataclasses, mappings, lists, tuples and frozensets of
    them, keys included — appending to `places` each field path where something was
    replaced (`where` and the dataclass field names joined by `.`, positions and keys
    left out); the same object when nothing was."""
    return _held(value, where, places)  # type: ignore[no-any-return]  # same shape


def _held(value: Any, where: str, places: list[str]) -> Any:
    if isinstance(value, str):
        kept = held_str(value)
        if kept is not value:
            places.append(where)
        return kept
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new = _held(old, f"{where}.{f.name}" if where else f.name, places)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    if isinstance(value, Mapping):
        items = [(_held(k, where, places), _held(v, where, places)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple | frozenset):
        parts = [_held(v, where, places) for v in value]
        if all(p is v for p, v in zip(parts, value, strict=True)):
            return value
        return parts if isinstance(value, list) else (
            tuple(parts) if isinstance(value, tuple) else frozenset(parts)
        )  # fmt: skip
    return value


def held_exchange(ex: TapeExchange) -> tuple[TapeExchange, tuple[str, ...]]:
    """The exchange with its request and response heads' text held, and the places
    where something was replaced (empty, and `ex` itself, when nothing was)."""
    places: list[str] = []
    request = _held_fields(ex.request, _REQUEST_TEXT, "request", places)
    response = ex.response
    if response is not None:
        response = _held_fields(response, _RESPONSE_TEXT, "response", places)
    if not places:
        return ex, ()
    return dataclasses.replace(ex, request=request, response=response), tuple(places)


_REQUEST_TEXT = ("method", "path", "query", "headers", "roller")
_RESPONSE_TEXT = ("reason", "headers")
M = TypeVar("M", RequestMeta, ResponseMeta)


def _held_fields(meta: M, fields: tuple[str, ...], side: str, places: list[str]) -> M:
    changed: dict[str, Any] = {}
    for name in fields:
        value = getattr(meta, name)
        original = dict(value) if isinstance(value, Mapping) else value
        kept = held(original)
        if kept is not original:
            changed[name] = kept
            places.append(f"{side} {name}")
    return meta._replace(**changed) if changed else meta

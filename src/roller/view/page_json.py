"""The page's JSON text: values dumped with their base64 blobs elided and counted
(`PageJson`), and the table that stores each distinct request or relation value once
(`Values`).

A harness resends its whole transcript on every call, so a page that carried each call's
request whole grew with the square of a conversation's length (a 1,000-call
conversation: a 217 MB page; 10k calls of `finalize_scale.py`'s shape: 833 MB). The page
states each call's request by reference instead: its items, system prompt, tool
definitions and other fields are places in one table, `values`, and a value already in
the table is not written again. Relations, of which the protocol writes one per later
call that carries a tool result (so they too grow with the square of a conversation's
length), are rows of places: their call, participant and tool ids, types, statuses and
evidence entries' sources and refs recur, their rows are a few bytes each (a relation's
own id is written as it is, an evidence entry as a row of its fields' places). Values
are keyed by a 16-byte BLAKE2b digest of their exact JSON text (`dumped`, keys in
their own order): equal texts are equal JSON values, which the page shows alike, so a
reference loses nothing (a value whose keys come in another order is simply stored
again). A value's blobs are elided once, when it is stored; the count is added for every
reference, so the summary counts the blobs each call shows, as when every request was
written whole.

Memory holds a digest and a place per distinct value (~120 bytes); the table's text goes
to a spool as values are first seen. The page's bulky sections (the calls, the relations'
rows, the table) are written in parts (`Parts`) of at most ~32 MiB each.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from roller.view.blobs import elide


def _escaped(text: str) -> str:
    """`<` and the JS line separators escaped: no value can close the script element, and
    each is one character, so escaping piece by piece equals escaping the whole."""
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


_stdlib = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumped(value: Any) -> str:
    """`value`'s compact JSON text, UTF-8, keys in their own order: orjson's, which is
    `json.dumps`'s but for a float's exponent (`1.5e-7`, not `1.5e-07`: the same
    number); a value orjson does not write (an integer past 64 bits, a lone surrogate,
    nesting past 255 levels) is written by `json.dumps`. A record holds no NaN
    (pydantic writes null). orjson writes ~8x faster: the page dumps every request
    item of every call."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return _stdlib(value)


def text_key(text: str) -> bytes:
    """A value's key by its exact JSON text: equal keys, equal texts (16 bytes of BLAKE2b)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_SHORT = 64  # a string up to this long is its own key (ids, types, statuses recur)


@dataclass(frozen=True, slots=True)
class Keyed:
    """A value with its exact JSON text and the text's key, made once (`keyed`) for the
    readers that need them: a request item's are needed by the diff's chat digests and
    by the value table, and dumping and hashing every item of every call was a third of
    the page's time."""

    value: Any
    text: str
    key: bytes


def keyed(value: Any) -> Keyed:
    text = dumped(value)
    return Keyed(value, text, text_key(text))


class PageJson:
    """Values as the page's JSON (compact, UTF-8, escaped), blobs elided and counted."""

    def __init__(self) -> None:
        self.elided = 0

    def shown(self, value: Any) -> Any:
        """`value` with its blobs elided (and counted)."""
        shown, count = elide(value)
        self.elided += count
        return shown

    def text(self, value: Any) -> str:
        return self.raw(self.shown(value))

    @staticmethod
    def raw(value: Any) -> str:
        return _escaped(dumped(value))


PART_CHARS = 32 * 1024 * 1024  # a part element is closed once it holds this much text


class Parts:
    """One JSON array or object of the page (`key`: where it goes in the page data, a
    dotted path), written into `out` as one or more
    `<script type="application/json" class="capture-part" data-key=KEY>` elements, each
    a piece of it: a new one begins once one holds `PART_CHARS` characters. A browser
    parses each on its own (`viewer.js` appends the pieces): as one element, the data of
    a page of 10k calls was more than the longest string V8 makes (~2^29 characters), so
    Chromium read it cut short and showed nothing."""

    def __init__(self, out: TextIO, key: str, array: bool) -> None:
        self._out = out
        self._head = f'<script type="application/json" class="capture-part" data-key="{key}">'
        self._brackets = "[]" if array else "{}"
        self._size = -1  # characters in the open element; -1: none is open

    def add(self, text: str) -> None:
        """`text` (an array element, or an object's `"key":value`) as the next member."""
        if self._size >= PART_CHARS:
            self.close()
        if self._size < 0:
            self._out.write(self._head + self._brackets[0] + text)
            self._size = len(text)
        else:
            self._out.write("," + text)
            self._size += len(text) + 1

    def close(self) -> None:
        if self._size >= 0:
            self._out.write(self._brackets[1] + "</script>")
            self._size = -1


class Values:
    """The table of distinct values, written into `parts` as one JSON array's elements;
    `request()` gives a request with each value replaced by its place in the table,
    `row()` a record's fields as places."""

    def __init__(self, j: PageJson, parts: Parts) -> None:
        self._j = j
        self._parts = parts
        self._places: dict[bytes, int] = {}  # digest -> place
        self._strings: dict[str | bool | None, int] = {}  # a short string, bool, None -> place
        self._blobs: dict[int, int] = {}  # place -> blobs elided from it, when any
        self._count = 0

    def ref(self, value: Any) -> int:
        # A short string (no blob is that short), a boolean or null: looked up as itself
        # (a relation's row holds several booleans); `type is`, since 1 == 1.0 == True as
        # dict keys, and no number is held here.
        if (
            value is None
            or value is True
            or value is False
            or (type(value) is str and len(value) <= _SHORT)
        ):
            place = self._strings.get(value)
            if place is None:
                place = self._strings[value] = self._add(dumped(value), value)
            return place
        return self._place(dumped(value), None, value)

    def keyed_ref(self, value: Keyed) -> int:
        """`ref(value.value)`, its text and key taken as they were made."""
        v = value.value
        if v is None or v is True or v is False or (type(v) is str and len(v) <= _SHORT):
            return self.ref(v)  # (`ref`'s values looked up as themselves)
        return self._place(value.text, value.key, v)

    def _place(self, text: str, key: bytes | None, value: Any) -> int:
        key = key or text_key(text)
        place = self._places.get(key)
        if place is None:
            place = self._places[key] = self._add(text, value)
        self._j.elided += self._blobs.get(place, 0)
        return place

    def _add(self, text: str, value: Any) -> int:
        """`value` (whose JSON text is `text`) written as the table's next element."""
        shown, count = elide(value)
        place = self._count
        self._count += 1
        if count:
            self._blobs[place] = count
        shown_text = self._j.raw(shown) if count else _escaped(text)  # no blob: the same text
        self._parts.add(shown_text)
        return place

    def row(
        self,
        record: dict[str, Any],
        literal: frozenset[str] = frozenset(),
        nested: dict[str, list[str]] | None = None,
    ) -> list[Any]:
        """`record`'s field values in its own key order, each as a place in the table, but
        the fields in `literal` as they are (an id unique to the record: the table would
        hold a digest for it and store it all the same) and a list as a list of entries:
        an entry of a field in `nested` that is an object with exactly the keys given
        there as a row of its values' places (a relation's evidence entry names a call
        and a tool call: as a whole it is as unique as the relation, its parts recur),
        any other entry as a place."""
        out: list[Any] = []
        for key, value in record.items():
            if key in literal:
                out.append(self._j.shown(value))
            elif isinstance(value, list):
                keys = (nested or {}).get(key)
                out.append([self._entry(v, keys) for v in value])
            else:
                out.append(self.ref(value))
        return out

    def _entry(self, value: Any, keys: list[str] | None) -> Any:
        if keys is not None and isinstance(value, dict) and list(value) == keys:
            return [self.ref(v) for v in value.values()]
        return self.ref(value)

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` as the page states it: `items` (their values `Keyed`) as
        `{"tag", "ref"}`, every other field as a place in the table."""
        return {
            key: [{"tag": i["tag"], "ref": self.keyed_ref(i["value"])} for i in value]
            if key == "items"
            else self.ref(value)
            for key, value in request.items()
        }


class ItemLists:
    """Each call's request items (`{"tag", "ref"}` as `Values.request` gives them) as
    the page writes them: `{"from", "keep", "refs", "tags"}` — the first `keep` places are
    those the call `from` (the same agent's previous call with an item list, or null)
    began with, `refs` the places after them, and `tags` the items' tags as runs
    `[tag, count]`. A conversation resends its transcript on every call, so a list of
    every item's place grew with the square of its length (~25 bytes an item a call: 8.5
    of a 500-call conversation's 30 MB page). Memory: each agent's last list of places."""

    def __init__(self) -> None:
        self._last: dict[str | None, tuple[str, list[int]]] = {}  # agent -> its last call

    def of(self, call_id: str, agent: str | None, items: list[dict[str, Any]]) -> dict[str, Any]:
        refs = [i["ref"] for i in items]
        base_id, base = self._last.get(agent, (None, []))
        keep = 0
        for mine, theirs in zip(refs, base, strict=False):
            if mine != theirs:
                break
            keep += 1
        self._last[agent] = (call_id, refs)
        tags: list[list[Any]] = []
        for item in items:
            if tags and tags[-1][0] == item["tag"]:
                tags[-1][1] += 1
            else:
                tags.append([item["tag"], 1])
        return {"from": base_id if keep else None, "keep": keep, "refs": refs[keep:], "tags": tags}


SAME = -1  # a row's field, or a list field's entry, that the row before holds as it is


class RowChanges:
    """Rows (of places, as `Values.row` gives them) as the page writes them: a field the
    row before holds too is `SAME`, and so is an entry of a list field the row before
    holds at the same index; the fields at `literal` are written as they are. The
    protocol's relations come in runs that differ in a field or two (one
    `result_in_context` per later call), and their rows were most of a long
    conversation's page (500 calls: 14.1 of 16.3 MB). A place is never negative."""

    def __init__(self, literal: frozenset[int]) -> None:
        self._literal = literal
        self._before: list[Any] | None = None

    def of(self, row: list[Any]) -> list[Any]:
        before, self._before = self._before, row
        if before is None or len(before) != len(row):
            return row
        out: list[Any] = []
        for i, (value, was) in enumerate(zip(row, before, strict=True)):
            if i in self._literal:
                out.append(value)
            elif value == was:
                out.append(SAME)
            elif isinstance(value, list) and isinstance(was, list):
                out.append(
                    [SAME if j < len(was) and e == was[j] else e for j, e in enumerate(value)]
                )
            else:
                out.append(value)
        return out

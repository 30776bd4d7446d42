"""The page's JSON text: values dumped with their base64 blobs elided and counted
(`PageJson`), and the table that stores each distinct request value once (`Values`).

A harness resends its whole transcript on every call, so a page that carried each call's
request whole grew with the square of a conversation's length (a 1,000-call
conversation: a 217 MB page; 10k calls of `finalize_scale.py`'s shape: 833 MB). The page
states each call's request by reference instead: its items, system prompt, tool
definitions and other fields are places in one table, `values`, and a value already in
the table is not written again. Values are keyed by the sha256 of their exact JSON text
(`json.dumps`, keys in their own order): equal texts are equal JSON values, which the
page shows alike, so a reference loses nothing (a value whose keys come in another order
is simply stored again). A value's blobs are elided once, when it is stored; the count
is added for every reference, so the summary counts the blobs each call shows, as when
every request was written whole.

Memory holds a digest and a place per distinct value; the table's text goes to a spool
as values are first seen.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TextIO

from roller.view.blobs import elide


def _escaped(text: str) -> str:
    """`<` and the JS line separators escaped: no value can close the script element, and
    each is one character, so escaping piece by piece equals escaping the whole."""
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class PageJson:
    """Values as the page's JSON (compact, UTF-8, escaped), blobs elided and counted."""

    def __init__(self) -> None:
        self.elided = 0

    def text(self, value: Any) -> str:
        shown, count = elide(value)
        self.elided += count
        return self.raw(shown)

    @staticmethod
    def raw(value: Any) -> str:
        return _escaped(_dumped(value))


class Values:
    """The table of distinct request values, written to `spool` as one JSON array's
    elements (`close()` ends the array's text); `request()` gives a request with each
    value replaced by its place in the table."""

    def __init__(self, j: PageJson, spool: TextIO) -> None:
        self._j = j
        self._spool = spool
        self._places: dict[bytes, tuple[int, int]] = {}  # digest -> (place, blobs elided)

    def ref(self, value: Any) -> int:
        text = _dumped(value)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        known = self._places.get(key)
        if known is None:
            shown, count = elide(value)
            place = len(self._places)
            shown_text = self._j.raw(shown) if count else _escaped(text)  # no blob: the same text
            self._spool.write(("," if place else "") + shown_text)
            known = self._places[key] = (place, count)
        self._j.elided += known[1]
        return known[0]

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` as the page states it: `items` as `{"tag", "ref"}`, every other field
        as a place in the table."""
        return {
            key: [{"tag": i["tag"], "ref": self.ref(i["value"])} for i in value]
            if key == "items"
            else self.ref(value)
            for key, value in request.items()
        }

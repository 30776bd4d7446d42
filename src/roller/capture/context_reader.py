"""Reading a capture's request bodies in order, parsing only what a body adds to an earlier one.

A harness resends its whole transcript on every call: a conversation's next request body
is, byte for byte, the previous one with its closing `]}` replaced by `,` and the new
messages (the transcript is the body's last member). `ContextReader.parse(body)` gives
exactly `parse_context(body)` (value, error and record JSON), parsing only the new part
when `body` extends a recent body that way, else the whole body.

Why the shortcut gives the same value (tests/capture/test_context_reader.py checks it
against the general path): a recent body `P` is kept only when orjson's writing of its
value `V` is `P` itself (the compact JSON harnesses send), `V` is an object whose last
member is a non-empty array, so `P` = `X + "]}"` with `X` everything up to that array's
last element. A new body `B` = `X + "," + T + "]}"` where `{"":[` + `T` + `]}` (the
new elements at the body's own depth) reads as an object holding one non-empty array `L`
that orjson writes back as those very bytes: orjson writes an array
element by element, so `B` is orjson's writing of `V` with `L` appended to its last
array — the value `parse_context(B)` gives, and `B` its record JSON (`parse_context`
takes a body orjson writes back unchanged as Python's reader's meaning:
`roller.capture.exact_json`). Any other body, or a new part that does not read so, takes
the general path. The value shares the earlier value's objects (no reader of a context
changes it).

A few recent bodies are kept (subagents' conversations interleave), each with its value:
memory is bounded by `KEEP` bodies, not by the capture.
"""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

import orjson

from roller.capture.context import ParsedContext, parse_context

KEEP = 8  # recent bodies a new one may extend (concurrent conversations of one capture)


class _Kept(NamedTuple):
    head: bytes  # the body without its closing "]}"
    value: dict[str, Any]
    last: str  # the key of the value's last member, a non-empty list


class ContextReader:
    def __init__(self) -> None:
        self._recent: deque[_Kept] = deque(maxlen=KEEP)

    def parse(self, body: bytes) -> ParsedContext:
        """`parse_context(body)`, reading only what `body` adds to a recent body."""
        for kept in self._recent:
            parsed = _extended(kept, body)
            if parsed is not None:  # the conversation's next call: it replaces its last
                self._recent.remove(kept)
                break
        else:
            parsed = parse_context(body)
        self._keep(body, parsed)
        return parsed

    def _keep(self, body: bytes, parsed: ParsedContext) -> None:
        value = parsed.value
        if parsed.json != body or not isinstance(value, dict) or not value:
            return  # not orjson's own writing of an object: no prefix to extend
        last = next(reversed(value))
        if isinstance(value[last], list) and value[last] and body.endswith(b"]}"):
            self._recent.appendleft(_Kept(body[:-2], value, last))


def _extended(kept: _Kept, body: bytes) -> ParsedContext | None:
    """The parse of `body` when it is `kept.head`, `","`, elements that orjson reads and
    writes back unchanged, and `"]}"`; None otherwise."""
    head = kept.head
    if len(body) < len(head) + 4 or not body.startswith(head) or not body.endswith(b"]}"):
        return None
    if body[len(head)] != 0x2C:  # ","
        return None
    # read as the last member of an object, as in the body: at the body's own depth
    # (orjson refuses nesting past 1,024 levels; the body read whole would be refused too)
    wrapped = b'{"":[' + body[len(head) + 1 :]
    try:
        added = orjson.loads(wrapped)[""]
    except orjson.JSONDecodeError:
        return None
    try:
        if not added or orjson.dumps({"": added}) != wrapped:
            return None
    except orjson.JSONEncodeError:  # nested past what orjson writes: the general path's
        return None
    value = dict(kept.value)
    value[kept.last] = [*kept.value[kept.last], *added]
    return ParsedContext(value, None, body)

"""Reading a capture's request bodies in order, parsing only what a body adds to an earlier one.

A harness resends its whole transcript on every call: a conversation's next request body
is, byte for byte, the previous one with its transcript array's last few elements
replaced by new ones, every other member unchanged. (Claude Code 2.1 sends `messages`
second, before `system`, `tools` and its settings, and moves its `cache_control` marker
to the newest message, so the previous last message is sent again without it; other
harnesses only append.) `ContextReader.parse(body)` gives exactly `parse_context(body)`
(value, error and record JSON), parsing only the elements after the part of the
transcript it shares with a recent body, else the whole body.

Why the shortcut gives the same value (tests/capture/test_context_reader.py checks it
against the general path): a recent body `P` is kept only when orjson's writing of its
value `V` is `P` itself (the compact JSON harnesses send) and `V` is an object. orjson
writes an object member by member and an array element by element, so each member
holding a non-empty array has its elements at places of their own in `P` (`_arrays`,
`_Array`: found from the lengths of orjson's writing of the members after it and of its
elements). With `P` = `X + "]" + Y` (`Y` the members after that array) and `X_k` the
part of `X` before that array's element `k` (its first `k` elements and their commas), a
new body `B` = `X_k + T + "]" + Y`, where `{"":[` + `T` + `]}` reads as an object
holding one non-empty array `L` that orjson writes back as those very bytes (each
element as written, `,` between), is orjson's writing of `V` with that array's elements
from `k` on replaced by `L`: the value `parse_context(B)` gives, and `B` its record JSON
(`parse_context` takes a body orjson writes back unchanged as Python's reader's meaning:
`roller.capture.exact_json`). The largest such `k` (at least 1) is taken: the whole
array, or its last elements, or as far as `B` begins as `P` does. Any other body, or a
new part that does not read so, takes the general path. The value shares the earlier
value's objects (no reader of a context changes it), its first `k` elements included.
Once a body extended a member, its successor is looked at for that member alone.

A few recent bodies are kept (subagents' conversations interleave), each with its value:
memory is bounded by `KEEP` bodies, not by the capture.
"""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

import orjson

from roller.capture.context import ParsedContext, parse_context
from roller.capture.shared_run import longest_run

KEEP = 8  # recent bodies a new one may extend (concurrent conversations of one capture)


class _Array(NamedTuple):
    """A member holding a non-empty array, where its elements are in a kept body."""

    member: str
    starts: tuple[int, ...]  # where each element starts
    close: int  # where the closing "]" is


class _Kept(NamedTuple):
    body: bytes
    value: dict[str, Any]
    arrays: tuple[_Array, ...]


class ContextReader:
    def __init__(self) -> None:
        self._recent: deque[_Kept] = deque(maxlen=KEEP)

    def parse(self, body: bytes) -> ParsedContext:
        """`parse_context(body)`, reading only what `body` adds to a recent body."""
        for kept in self._recent:
            for array in kept.arrays:
                found = _extended(kept, array, body)
                if found is not None:  # the conversation's next call: it replaces its last
                    parsed, grown = found
                    self._recent.remove(kept)
                    self._recent.appendleft(_Kept(body, parsed.value, (grown,)))
                    return parsed
        parsed = parse_context(body)
        value = parsed.value
        if parsed.json == body and isinstance(value, dict):  # orjson's own writing
            arrays = _arrays(value, len(body))
            if arrays:
                self._recent.appendleft(_Kept(body, value, arrays))
        return parsed


def _arrays(value: dict[str, Any], size: int) -> tuple[_Array, ...]:
    """Each member of `value` holding a non-empty array, with where its elements are in
    orjson's writing of `value` (`size` bytes long): the lengths of the members after it
    are counted back from the closing "}". None found in a value orjson does not write
    (its body is then not kept)."""
    found: list[_Array] = []
    end = size - 1  # where the member being looked at ends: a "," or the closing "}"
    try:
        for key, member in reversed(value.items()):
            if isinstance(member, list) and member:
                lengths = [len(orjson.dumps(element)) for element in member]
                written = sum(lengths) + len(lengths) + 1  # "[", "]" and the commas
                close = end - 1
                found.append(_Array(key, _starts(close - written + 2, lengths), close))
            else:
                written = len(orjson.dumps(member))
            end -= len(orjson.dumps(key)) + 1 + written + 1  # `"key":value` and its ","
    except orjson.JSONEncodeError:  # (an integer past 64 bits Python's reader read)
        return ()
    return tuple(reversed(found))


def _starts(at: int, lengths: list[int]) -> tuple[int, ...]:
    """Where each of elements of these lengths starts, written from `at`, `,` between."""
    out = []
    for length in lengths:
        out.append(at)
        at += length + 1
    return tuple(out)


def _shared(body: bytes, earlier: memoryview, starts: tuple[int, ...], close: int) -> int:
    """How many of the array's elements `body` begins with, as `earlier` holds them with
    the `,` after each (the largest such count: all of them, or as far as it goes)."""

    def holds(k: int) -> bool:
        if k == len(starts):
            return body.startswith(earlier[:close]) and body[close : close + 1] == b","
        return body.startswith(earlier[: starts[k]])

    return longest_run(len(starts), holds)


def _extended(kept: _Kept, array: _Array, body: bytes) -> tuple[ParsedContext, _Array] | None:
    """The parse of `body` when it is `kept.body` with `array`'s elements after the first
    k (k ≥ 1) replaced by elements that orjson reads and writes back unchanged, and
    where they are in `body`; None otherwise."""
    earlier = kept.body
    seen = memoryview(earlier)  # (compared in place: no copy of either part)
    tail = len(earlier) - array.close  # "]" and the members after: unchanged
    if len(body) < tail + array.starts[0] + 2 or not body.endswith(seen[array.close :]):
        return None
    k = _shared(body, seen, array.starts, array.close)
    if k == 0:
        return None
    at = array.close + 1 if k == len(array.starts) else array.starts[k]
    if at >= len(body) - tail:
        return None
    new = body[at : len(body) - tail]
    # read as the last member of an object, as in the body: at the body's own depth
    # (orjson refuses nesting past 1,024 levels; the body read whole would be refused too)
    try:
        added = orjson.loads(b'{"":[' + new + b"]}")[""]
    except orjson.JSONDecodeError:
        return None
    try:
        written = [orjson.dumps(element) for element in added]
    except orjson.JSONEncodeError:  # nested past what orjson writes: the general path's
        return None
    if not added or b",".join(written) != new:
        return None
    value = dict(kept.value)
    value[array.member] = [*kept.value[array.member][:k], *added]
    starts = array.starts[:k] + _starts(at, [len(element) for element in written])
    grown = _Array(array.member, starts, len(body) - tail)
    return ParsedContext(value, None, body), grown

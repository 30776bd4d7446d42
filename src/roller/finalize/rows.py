"""`Rows`: values finalize keeps for every call, each as a `marshal` row in one buffer.

A tuple of a few strings and integers per call costs ~0.1-0.2 KB as Python objects;
as a row of bytes, its length. `marshal` writes any integer and any string exactly
(lone surrogates included) and reads a row back in about a microsecond, so a row is
made again whenever it is asked for (`LazySequence`). Used for the calls' facts
(`roller.finalize.kept_facts`) and their tool ids (`roller.finalize.tool_ids`).
"""

from __future__ import annotations

import marshal
from array import array
from collections.abc import Iterator
from typing import Any, TypeVar

from roller.capture.lazy_sequence import LazySequence

T = TypeVar("T", bound=tuple[Any, ...])  # what marshal writes: tuples of its values


class Rows(LazySequence[T]):
    __slots__ = ("_data", "_ends")

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = array("q")  # per row: where it ends in `_data`

    def append(self, value: T) -> None:
        self._data += marshal.dumps(value)
        self._ends.append(len(self._data))

    def __len__(self) -> int:
        return len(self._ends)

    def _make(self, i: int) -> T:
        start = self._ends[i - 1] if i > 0 else 0
        value: T = marshal.loads(self._data[start : self._ends[i]])
        return value

    row = _make  # item i without the sequence's index checks (0 <= i < len)

    def __iter__(self) -> Iterator[T]:
        data, start = self._data, 0
        for end in self._ends:
            value: T = marshal.loads(data[start:end])
            yield value
            start = end

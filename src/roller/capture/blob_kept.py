"""What compact/v3's blob writer keeps of recent bodies, so that it cuts a new one only
for what it adds (`roller.capture.blobs`, "Cost"): bounded memories of recent texts and
what was cut up to them.

- `Kept`: recent prefixes (an array's text to its last element's end; a body's bytes to
  one of its values) with what was cut up to their end, found by their first `KEY`
  characters or bytes;
- `Chain`: a kept array's cut, the chain digest at every element's end, and
  `shared_elements`, how many of a kept array's first elements a text begins with;
- `Tails`: the text of recent bodies after their first grown array, with its pieces.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, NamedTuple, TypeVar

from roller.capture.shared_run import longest_run


class Chain(NamedTuple):
    """A kept array's cut: for each element n, where it ends (from the array's `[`) and
    the chain of the first n + 1 elements there."""

    ends: tuple[int, ...]
    digests: tuple[bytes, ...]

    def size(self) -> int:
        """Its memory, about: a 32-byte `bytes` (65), an `int` (28), two tuple slots."""
        return 110 * len(self.ends)


def shared_elements(text: str, i: int, prefix: str, ends: tuple[int, ...]) -> int:
    """How many of a kept array's first elements (`prefix`, its elements ending at
    `ends`) the text at `i` begins with (a run's text holds every shorter run's)."""

    def holds(k: int) -> bool:
        return text.startswith(prefix if k == len(ends) else prefix[: ends[k - 1]], i)

    return longest_run(len(ends), holds)


class Tails:
    """The text of recent bodies after their first array with new elements, with the
    pieces it was cut into, newest first: `find(text, i)` gives the pieces of one that
    `text` ends with from `i`. Bounded: `COUNT` of them, none longer than `CHARS`."""

    COUNT: Final = 8
    CHARS: Final = 1 << 20

    def __init__(self) -> None:
        self._kept: list[tuple[str, tuple[bytes, ...]]] = []

    def find(self, text: str, i: int) -> tuple[bytes, ...] | None:
        for tail, pieces in self._kept:
            if len(text) - i == len(tail) and text.startswith(tail, i):
                return pieces
        return None

    def keep(self, tail: str, pieces: tuple[bytes, ...]) -> None:
        if len(tail) > self.CHARS:
            return
        self._kept = [(tail, pieces), *(k for k in self._kept if k[0] != tail)][: self.COUNT]


_S = TypeVar("_S", str, bytes)
_V = TypeVar("_V")


def _no_size(cut: object) -> int:
    return 0


class Kept(Generic[_S, _V]):
    """Recent prefixes (an array's text to its last element's end; a body's bytes to one
    of its values) with what was cut up to their end, found by their first `KEY`
    characters or bytes. Bounded: `KEYS` first parts, `PER_KEY` prefixes under each,
    `BYTES` of prefixes and cuts in memory in all (`sys.getsizeof` for a prefix: a text
    of wide characters takes up to four bytes a character; `size` for its cut); the
    least recently used first part goes first."""

    KEY: Final = 256  # shorter prefixes are cheap to cut again and are not kept
    KEYS: Final = 64
    PER_KEY: Final = 4
    BYTES: Final = 64 << 20

    def __init__(self, size: Callable[[_V], int] = _no_size) -> None:
        self._by_key: OrderedDict[_S, list[tuple[_S, _V]]] = OrderedDict()
        self._size = size
        self._bytes = 0

    def entries(self, seq: _S, i: int) -> list[tuple[_S, _V]]:
        """The prefixes kept under `seq`'s first part at `i`, newest first (`seq` need
        not begin with them)."""
        return self._by_key.get(seq[i : i + self.KEY], [])

    def matches(self, seq: _S, i: int) -> list[tuple[int, _V]]:
        """The kept prefixes `seq` holds at `i`, longest first: (length, cut)."""
        found = [
            (len(prefix), cut) for prefix, cut in self.entries(seq, i) if seq.startswith(prefix, i)
        ]
        return sorted(found, key=lambda match: -match[0])

    def keep(self, prefix: _S, cut: _V) -> None:
        if len(prefix) < self.KEY:
            return
        key = prefix[: self.KEY]
        kept = self._by_key.pop(key, [])
        for old in [k for k in kept if prefix.startswith(k[0])]:  # this one covers them
            kept.remove(old)
            self._bytes -= self._cost(old)
        kept.insert(0, (prefix, cut))
        self._bytes += self._cost((prefix, cut))
        while len(kept) > self.PER_KEY:
            self._bytes -= self._cost(kept.pop())
        self._by_key[key] = kept
        while len(self._by_key) > self.KEYS or (self._bytes > self.BYTES and self._by_key):
            _, dropped = self._by_key.popitem(last=False)
            self._bytes -= sum(self._cost(k) for k in dropped)

    def _cost(self, kept: tuple[_S, _V]) -> int:
        return sys.getsizeof(kept[0]) + self._size(kept[1])

"""`LazySequence`: a read-only sequence that keeps its items packed and makes each one
when it is asked for.

What a capture keeps per call for its whole length (the tape index's refs, finalize's
facts and tool ids, the manifest's numbered lists, a conversation's result ids) is
held as bytes or numbers, not as an object per item (docs/benchmarks.md, "Finalize at
scale, round 5"). Each such store is one of these: it says how many items it holds
and how to make item i (`_make`), and is indexed (negative indices, slices as lists),
iterated, concatenated (`+`, giving a list) and compared like the list of its items —
equal to any sequence (not a string) of equal items, so a store and the list it stands
for compare equal either way round, and unhashable, as a list is.
A store whose items are asked for in a loop may iterate faster on its own.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class LazySequence(Sequence[T]):
    __slots__ = ()

    @abstractmethod
    def _make(self, i: int) -> T:
        """Item i, 0 <= i < len(self)."""

    # __len__ stays Sequence's abstract method: each store says how many it holds.

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            return [self._make(j) for j in range(*i.indices(len(self)))]
        return self._make(range(len(self))[i])  # IndexError past either end

    def __iter__(self) -> Iterator[T]:
        return (self._make(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            if len(other) != len(self):
                return False
            return all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list's (a store may still grow)

    def __add__(self, other: object) -> list[T]:
        """Concatenated as the list it stands for is (with a list, or another store)."""
        if isinstance(other, list | LazySequence):
            return [*self, *other]
        return NotImplemented

    def __radd__(self, other: object) -> list[T]:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

"""The ids of the tool results a call's context carries, shared along a conversation.

A harness resends its whole transcript, so call k of a conversation carries the results
of call k-1 and the ones added since: as a tuple per call that is the square of a
conversation's length in memory (~0.25 KB a call at `finalize_scale.py`'s 40 turns,
docs/benchmarks.md, round 4). `ResultLists` keeps one list per conversation and a call
as the length of the list's prefix it carries (`ResultIds`, a view), found among the
few lists used last (subagents' conversations interleave); ids that do not extend a
recent list start a list of their own. A view equals the tuple it stands for, item by
item; no list's prefix ever changes (a list is only appended to), so a view never does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import overload

KEEP = 8  # recent lists tried for a prefix


class ResultIds(Sequence[str]):
    """The first `n` ids of a conversation's list."""

    __slots__ = ("_ids", "_n")

    def __init__(self, ids: list[str], n: int) -> None:
        self._ids = ids
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return tuple(self._ids[: self._n])[i]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return self._ids[i % self._n]

    def __iter__(self) -> Iterator[str]:
        ids = self._ids
        return (ids[k] for k in range(self._n))

    def __contains__(self, item: object) -> bool:
        try:
            self._ids.index(item, 0, self._n)  # type: ignore[arg-type]
        except ValueError:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self._n and list(other) == self._ids[: self._n]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._ids[: self._n]))

    def __repr__(self) -> str:
        return f"ResultIds({self._ids[: self._n]!r})"


class ResultLists:
    """Every call's result ids, as (list number, prefix length) (`add`, `view`)."""

    def __init__(self) -> None:
        self._lists: list[list[str]] = []
        self._recent: deque[int] = deque(maxlen=KEEP)

    def add(self, ids: Sequence[str]) -> tuple[int, int]:
        """Where `ids` are kept: a list that starts with them, or extended to them."""
        n = len(ids)
        for number in self._recent:
            kept = self._lists[number]
            have = len(kept)
            if have <= n and kept == list(ids[:have]):
                kept += ids[have:]
            elif have > n and kept[:n] == list(ids):
                pass
            else:
                continue
            self._recent.remove(number)
            self._recent.appendleft(number)
            return number, n
        self._lists.append(list(ids))
        self._recent.appendleft(len(self._lists) - 1)
        return len(self._lists) - 1, n

    def view(self, number: int, n: int) -> ResultIds:
        return ResultIds(self._lists[number], n)

    def carries(self, number: int, n: int, item: str) -> bool:
        """`item in self.view(number, n)`, without making the view."""
        try:
            self._lists[number].index(item, 0, n)
        except ValueError:
            return False
        return True

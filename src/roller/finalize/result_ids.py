"""The ids of the tool results a call's context carries, shared along a conversation.

A harness resends its whole transcript, so call k of a conversation carries the results
of call k-1 and the ones added since: as a tuple per call that is the square of a
conversation's length in memory (~0.25 KB a call at `finalize_scale.py`'s 40 turns,
docs/benchmarks.md, round 4). `ResultLists` keeps one list per conversation, its ids as
UTF-8 in one buffer with their ends (~20 bytes an id, where a string in a list costs
~70), and a call as the length of the list's prefix it carries (`ResultIds`, a view),
found among the few lists extended last (subagents' conversations interleave; for
each, the ids of the call that extended it last, to compare with); ids that do not
extend a recent list start a list of their own. A view equals the tuple it stands for,
item by item; a list is only appended to, so a view never changes.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Sequence

from roller.capture.lazy_sequence import LazySequence

KEEP = 8  # recent lists tried for a prefix


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate is kept as it is


class _Ids:
    """One conversation's ids, appended to only."""

    __slots__ = ("ends", "text")

    def __init__(self) -> None:
        self.text = bytearray()
        self.ends = array("q")  # per id: where it ends in `text`

    def extend(self, ids: Sequence[str]) -> None:
        for x in ids:
            self.text += _utf8(x)
            self.ends.append(len(self.text))

    def item(self, k: int) -> str:
        start = self.ends[k - 1] if k > 0 else 0
        return self.text[start : self.ends[k]].decode("utf-8", "surrogatepass")

    def holds(self, n: int, item: str) -> bool:
        """Whether `item` is one of the first `n` ids."""
        return 0 <= self.position(item, n) < n

    def position(self, item: str, n: int | None = None) -> int:
        """The place of `item` among the first `n` ids (all: None), or -1."""
        count = len(self.ends) if n is None else min(n, len(self.ends))
        if count <= 0:
            return -1
        wanted, ends, stop = _utf8(item), self.ends, self.ends[count - 1]
        at = self.text.find(wanted, 0, stop)
        while at >= 0:
            # the ids that start at `at`: the first (at 0), and each after an id ending there
            first = [0] if at == 0 else []
            starting = first + [j + 1 for j in range(bisect_left(ends, at), bisect_right(ends, at))]
            for k in starting:
                if k < count and ends[k] == at + len(wanted):
                    return k
            at = self.text.find(wanted, at + 1, stop)
        return -1


class ResultIds(LazySequence[str]):
    """The first `n` ids of a conversation's list."""

    __slots__ = ("_ids", "_n")

    def __init__(self, ids: _Ids, n: int) -> None:
        self._ids = ids
        self._n = n

    def __len__(self) -> int:
        return self._n

    def _make(self, i: int) -> str:
        return self._ids.item(i)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and self._ids.holds(self._n, item)


class ResultLists:
    """Every call's result ids, as (list number, prefix length) (`add`, `view`)."""

    def __init__(self) -> None:
        self._lists: list[_Ids] = []
        # recent lists, each with the ids of the call that extended it last
        self._recent: deque[tuple[int, tuple[str, ...]]] = deque(maxlen=KEEP)
        # where an id is in a list, as asked last (the derived-relation scan asks about
        # one tool call's id for each later call of its conversation)
        self._places: dict[tuple[int, str], int] = {}

    def add(self, ids: tuple[str, ...]) -> tuple[int, int]:
        """Where `ids` are kept: a list that starts with them, or extended to them."""
        self._places.clear()  # an id not found may be found now
        n = len(ids)
        for entry in self._recent:
            number, last = entry
            have = len(last)
            if have <= n and ids[:have] == last:
                self._lists[number].extend(ids[have:])
            elif have > n and last[:n] == ids:
                ids = last  # nothing to add; the list still ends as `last` does
            else:
                continue
            self._recent.remove(entry)
            self._recent.appendleft((number, ids))
            return number, n
        kept = _Ids()
        kept.extend(ids)
        self._lists.append(kept)
        self._recent.appendleft((len(self._lists) - 1, ids))
        return len(self._lists) - 1, n

    def view(self, number: int, n: int) -> ResultIds:
        return ResultIds(self._lists[number], n)

    def carries(self, number: int, n: int, item: str) -> bool:
        """`item in self.view(number, n)`, without making the view."""
        return 0 <= self._place(number, item) < n

    def carrying(
        self, numbers: Sequence[int], counts: Sequence[int], calls: Iterable[int], item: str
    ) -> list[int]:
        """Those of `calls` whose view (list `numbers[j]`, prefix `counts[j]`) holds
        `item`, in order: `carries` for each in one loop (the derived-relation scan asks
        it of every later call of a conversation, most of them on one list)."""
        out = []
        last = at = -1
        for j in calls:
            number = numbers[j]
            if number != last:
                last, at = number, self._place(number, item)
            if 0 <= at < counts[j]:
                out.append(j)
        return out

    def _place(self, number: int, item: str) -> int:
        """Where `item` is in list `number` (-1: not there). An id is in a list once (a
        call's ids are each once, and a list is extended by new ones only), and a list
        only grows, so where it is, once found, stays where it is."""
        places = self._places
        at = places.get((number, item))
        if at is None:
            if len(places) >= 4096:
                places.clear()
            at = places[number, item] = self._lists[number].position(item)
        return at

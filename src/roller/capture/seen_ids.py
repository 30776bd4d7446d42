"""Which record ids were seen more than once, without keeping every id.

A capture of 100k calls holds ~1.4M relations (a tool result is in the context of every
later call of its conversation); keeping each `relation_id` to find the duplicates was
most of `roller validate`'s memory at that size (~100 MB, and as much again to count
them). Finalize numbers the ids `<prefix>NNNNN` in order (`roller.finalize.ids`), so a
run of ids that count up one by one is kept as its bounds; any other id (out of order,
or not in that form) is kept as itself. The answer is exact for any input: an id is a
duplicate exactly when the same string was added before.
"""

from __future__ import annotations


class SeenIds:
    """Add ids one at a time; `duplicates()` lists each id added more than once."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._low = 0  # the run: numbers low <= n < high, each seen once, in order
        self._high = 0
        self._others: set[str] = set()
        self._dups: set[str] = set()
        self._next: str | None = None  # the run's next id as written: one comparison

    def add(self, rid: str) -> None:
        if rid == self._next and rid not in self._others:
            self._high += 1
            self._next = f"{self._prefix}{self._high:05d}"
            return
        n = self._number(rid)
        if (n is not None and self._low <= n < self._high) or rid in self._others:
            self._dups.add(rid)
        elif n is not None and self._high in (n, self._low):
            # The run's next number, or the first of an empty run.
            if self._low == self._high:
                self._low = n
            self._high = n + 1
            self._next = f"{self._prefix}{self._high:05d}"
        else:
            self._others.add(rid)

    def duplicates(self) -> list[str]:
        return sorted(self._dups)

    def kept(self) -> int:
        """How many ids are held one by one (not as part of the run)."""
        return len(self._others)

    def _number(self, rid: str) -> int | None:
        """n when `rid` is exactly `<prefix>` and n written with at least five digits."""
        if not rid.startswith(self._prefix):
            return None
        digits = rid[len(self._prefix) :]
        if not (digits.isascii() and digits.isdigit()):
            return None
        n = int(digits)
        return n if f"{n:05d}" == digits else None

"""How far a text begins as a kept one does, counted in whole elements: `longest_run`.

Both readers of a resent transcript ask it — finalize's `ContextReader` (how many of a
kept body's array elements a new body begins with) and compact/v3's blob writer
(`blob_kept.shared_elements`, how many of a kept array's elements a new array begins
with) — each with its own test of a run of elements, on its own representation.
"""

from __future__ import annotations

from collections.abc import Callable


def longest_run(count: int, holds: Callable[[int], bool]) -> int:
    """The largest `k` ≤ `count` for which `holds(k)`, where `holds(k)` implies
    `holds(j)` for every `j` < `k` and `holds(0)` is taken as true. All `count` of them
    and all but the last are tried first (a transcript that grew; one whose last message
    came again changed, as Claude Code sends it), then a binary search."""
    if count <= 0 or holds(count):
        return max(count, 0)
    if count > 1 and holds(count - 1):
        return count - 1
    low, high = 0, count - 2  # holds(low); the answer is within
    while low < high:
        mid = (low + high + 1) // 2
        if holds(mid):
            low = mid
        else:
            high = mid - 1
    return low

"""How deep a native participant sits, from the parent links its harness's logs give.

Shared by the readers whose logs name each agent's parent (one row or file per agent):
a participant's depth is the length of its parent chain, counting a parent the logs
name but do not describe (that parent is reported missing by the reader), and stopping
at a cycle rather than looping.
"""

from __future__ import annotations

from collections.abc import Mapping


def chain_depth(key: str, parents: Mapping[str, str | None]) -> int:
    """The number of parent links above `key` (`parents`: every known key -> its parent)."""
    depth, seen, cur = 0, {key}, key
    while (parent := parents.get(cur)) is not None:
        depth += 1
        if parent not in parents or parent in seen:
            break
        seen.add(parent)
        cur = parent
    return depth

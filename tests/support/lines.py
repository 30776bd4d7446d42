"""Record-like JSONL lines for the tests of formal-file writing."""

from __future__ import annotations

from collections.abc import Iterator


def record_lines(total: int) -> Iterator[bytes]:
    """Record-like lines of growing sizes, `total` bytes in all or a little more (past
    several of the writer's batches)."""
    n = written = 0
    while written < total:
        line = b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (n * 7919 % 200_000))
        yield line
        written += len(line)
        n += 1

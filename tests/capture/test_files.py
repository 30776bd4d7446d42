"""Formal files: written atomically while described, and checked against the disk."""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from roller.capture.files import _Drain, atomic_write_lines, describe_file, holds


def test_a_written_file_is_described_as_the_disk_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, [b'{"a":1}\n', b'{"b":"x\\ny"}\n', b""])
    assert entry == describe_file(path)
    assert entry.lines == 2
    assert holds(path, entry)


def test_a_changed_file_no_longer_holds_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, [b'{"a":1}\n'])
    path.write_bytes(b'{"a":2}\n')  # one byte flipped, same size
    assert not holds(path, entry)
    path.write_bytes(b'{"a":1}\n\n')  # the same bytes and one more
    assert not holds(path, entry)


def test_lines_are_counted_whatever_the_chunks(tmp_path: Path) -> None:
    chunks = [b"", b"\n", b"a\n", b"a\nb\n", b"a\nb", b"no newline", b"\n\n", b'{"x":1}\n']
    entry = atomic_write_lines(tmp_path / "f", chunks)
    assert entry.lines == b"".join(chunks).count(b"\n") == describe_file(tmp_path / "f").lines


def _lines_of(total: int) -> Iterator[bytes]:
    """Record-like lines of growing sizes, `total` bytes in all (past several batches)."""
    n = written = 0
    while written < total:
        line = b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (n * 7919 % 200_000))
        yield line
        written += len(line)
        n += 1


def test_a_large_file_is_described_as_written_whatever_thread_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, _lines_of(12 << 20))
    assert entry == describe_file(path)
    assert entry.bytes > 12 << 20
    assert holds(path, entry)
    assert not [t for t in threading.enumerate() if t.name == "roller-drain"]


def test_a_write_that_fails_is_raised_not_lost() -> None:
    # /dev/full: every write fails with ENOSPC, as on a full disk
    with (
        open("/dev/full", "wb", buffering=0) as fh,
        _Drain(fh) as drain,
        pytest.raises(OSError) as failed,
    ):
        for _ in range(40):  # past the queue's bound: a put must not block forever
            drain.put([b"x" * (1 << 20)])
        drain.finish()
    assert failed.value.errno == errno.ENOSPC


def test_a_producer_that_fails_leaves_no_thread_and_no_file(tmp_path: Path) -> None:
    def failing() -> Iterator[bytes]:
        yield from _lines_of(5 << 20)
        raise RuntimeError("the records could not be made")

    path = tmp_path / "calls.jsonl"
    with pytest.raises(RuntimeError, match="could not be made"):
        atomic_write_lines(path, failing())
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary sibling
    assert not [t for t in threading.enumerate() if t.name == "roller-drain"]

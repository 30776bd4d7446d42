"""Formal files: written atomically while described, each batch read back and compared."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from roller.capture.files import _BATCH, _Drain, atomic_write_lines, describe_file
from roller.errors import IntegrityError
from tests.support.lines import record_lines


def test_a_written_file_is_described_as_the_disk_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, [b'{"a":1}\n', b'{"b":"x\\ny"}\n', b""])
    assert entry == describe_file(path)
    assert entry.lines == 2


def _flipping_reads(monkeypatch: pytest.MonkeyPatch, nth: int) -> list[int]:
    """Reads back through `os.pread` whose `nth` (from 1) has one byte flipped: what a
    file changed under the writer, or a write that did not land as asked, reads like."""
    real = os.pread
    reads: list[int] = []

    def pread(fd: int, n: int, at: int) -> bytes:
        data = real(fd, n, at)
        reads.append(at)
        if len(reads) == nth and data:
            return bytes([data[0] ^ 1]) + data[1:]
        return data

    monkeypatch.setattr(os, "pread", pread)
    return reads


@pytest.mark.parametrize("nth", [1, 2, 7], ids=["first batch", "second", "a later one"])
def test_a_batch_read_back_unlike_written_fails_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nth: int
) -> None:
    reads = _flipping_reads(monkeypatch, nth)
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b"the file before\n")
    with pytest.raises(IntegrityError, match="read back unlike written"):
        atomic_write_lines(path, record_lines(8 * _BATCH))  # batches enough for the 7th
    assert len(reads) >= nth
    assert path.read_bytes() == b"the file before\n"  # the old file stays, no sibling left
    assert list(tmp_path.iterdir()) == [path]
    assert not [t for t in threading.enumerate() if t.name == "roller-drain"]


def test_each_byte_written_is_read_back_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _flipping_reads(monkeypatch, 0)  # none flipped: where each read starts
    entry = atomic_write_lines(tmp_path / "calls.jsonl", record_lines(3 * _BATCH))
    assert entry == describe_file(tmp_path / "calls.jsonl")
    assert reads == sorted(set(reads)) and reads[0] == 0 and len(reads) > 2


def test_reads_that_come_back_short_are_read_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: real(fd, min(n, 1000), at))
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, record_lines(1 << 20))
    assert entry == describe_file(path)


def test_a_file_grown_after_its_writes_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.fsync

    def fsync(fd: int) -> None:  # another writer appends before the file is closed
        os.pwrite(fd, b"x", os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    path = tmp_path / "calls.jsonl"
    with pytest.raises(IntegrityError, match="is not 8 bytes long"):
        atomic_write_lines(path, [b'{"a":1}\n'])
    assert list(tmp_path.iterdir()) == []


def test_lines_are_counted_whatever_the_chunks(tmp_path: Path) -> None:
    chunks = [b"", b"\n", b"a\n", b"a\nb\n", b"a\nb", b"no newline", b"\n\n", b'{"x":1}\n']
    entry = atomic_write_lines(tmp_path / "f", chunks)
    assert entry.lines == b"".join(chunks).count(b"\n") == describe_file(tmp_path / "f").lines


def test_a_large_file_is_described_as_written_whatever_thread_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    entry = atomic_write_lines(path, record_lines(12 * _BATCH))
    assert entry == describe_file(path)
    assert entry.bytes > 12 * _BATCH
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
        yield from record_lines(5 * _BATCH)
        raise RuntimeError("the records could not be made")

    path = tmp_path / "calls.jsonl"
    with pytest.raises(RuntimeError, match="could not be made"):
        atomic_write_lines(path, failing())
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary sibling
    assert not [t for t in threading.enumerate() if t.name == "roller-drain"]

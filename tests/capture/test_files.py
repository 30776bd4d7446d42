"""Formal files: written atomically while described, and checked against the disk."""

from __future__ import annotations

from pathlib import Path

from roller.capture.files import atomic_write_lines, describe_file, holds


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

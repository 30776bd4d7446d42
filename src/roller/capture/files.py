"""Writing formal files safely and describing them for the manifest.

Rules kept: a formal file is written to a temporary sibling, fsynced and renamed into
place, so a reader sees the old file or the new one, never half of one; the manifest's
`files` entries are computed from the bytes actually on disk.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from roller.capture.models import FileEntry
from roller.errors import IntegrityError


def atomic_write(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write `data` (bytes, or pieces of them) to `path` so that a crash leaves either the
    old file or the new one."""
    atomic_write_lines(path, (data,) if isinstance(data, bytes) else data)


def atomic_write_lines(path: Path, chunks: Iterable[bytes]) -> FileEntry:
    """Stream `chunks` into `path` atomically (as `atomic_write`); describe what was
    written (`write_checked` into a temporary sibling, then `move_in`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_sibling(path)
    entry = write_checked(tmp, chunks)
    move_in(tmp, path)
    return entry


def temp_sibling(path: Path, kind: str = "tmp") -> Path:
    """Where `path` is written before it is moved in place (this process's own name)."""
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}")


def write_checked(tmp: Path, chunks: Iterable[bytes]) -> FileEntry:
    """Write `chunks` to `tmp`, fsynced, and describe what the file holds; on any failure
    `tmp` is removed.

    The sha256, size and line count are computed as the file is written, so a formal file
    of any size is never held in memory. Each batch is read back from the file once
    written and compared with what was written, and the bytes hashed are the ones that
    compared equal: the entry describes what the file holds, or `IntegrityError` is
    raised (checked once, in the writing, where publication used to read the whole file
    back after it and hash it a second time). Past `_BATCH` bytes the writing and the
    checking go to threads of their own (`_Drain`), beside the code that makes the
    chunks: a capture's calls are made in Python while the previous ones are written,
    read back and hashed, all of which release the GIL."""
    size = lines = 0
    try:
        # read as well as written: each batch is read back (`_Drain`)
        with open(tmp, "w+b", buffering=0) as fh, _Drain(fh) as drain:
            batch: list[bytes] = []
            held = 0
            for chunk in chunks:
                batch.append(chunk)
                held += len(chunk)
                lines += _lines(chunk)
                if held >= _BATCH:
                    drain.put(batch)
                    size += held
                    batch, held = [], 0
            drain.put(batch)
            size += held
            digest = drain.finish()
            os.fsync(fh.fileno())
            if os.fstat(fh.fileno()).st_size != size:
                raise IntegrityError(f"{tmp}: the file written is not {size} bytes long")
    except BaseException:
        tmp.unlink(missing_ok=True)  # the file it was to replace stays as it was
        raise
    return FileEntry(sha256=digest, bytes=size, lines=lines)


def move_in(tmp: Path, path: Path) -> None:
    """Put the file written at `tmp` in place of `path`, in one step, durably."""
    os.replace(tmp, path)
    fsync_dir(path.parent)


# Bytes handed to the drain at once. Each batch costs its threads a wake and the GIL
# three times over; at 256 KiB, calls.jsonl of a 10k capture (765 MB) took 1.2–1.5 s
# to write, at 1 MiB 1.05–1.2 (at 4 MiB 1.5: a batch no longer stays in the cache
# between its write, its read-back and its hash). docs/benchmarks.md, round 20.
_BATCH = 1 << 20
_SYNC_EVERY = 32 << 20  # bytes written between the drain's syncs
_QUEUED = 4  # batches each of its threads may hold: memory stays bounded


class _Drain:
    """Writes batches of bytes to an open file (readable too), reads each back, and
    hashes them, in order.

    The first batch is written, read back and hashed in the caller's thread; from the
    second, one thread writes and another reads back, compares and hashes what the first
    wrote (each releases the GIL: on two cores they run beside each other and beside the
    caller), so a small file costs no thread. A batch read back unlike what was written
    is an `IntegrityError`. Every `_SYNC_EVERY` bytes the writer asks a third thread to
    `fdatasync` what it wrote: the disk works while the file is made, and the closing
    `fsync` finds little left (10k calls: 0.7 s of it gone; a sync in the writer's own
    thread was a barrier that held the writes up, and made finalize slower). A write, a
    read-back or a sync that fails is raised to the caller at its next `put` or at
    `finish` (a failed sync's error is reported once per open file, so it must not be
    left to the closing `fsync`)."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._digest = hashlib.sha256()
        self._written = 0  # bytes written so far: where the next batch starts
        self._writes_queue: queue.Queue[bytes | None] | None = None
        self._checks_queue: queue.Queue[tuple[int, bytes] | None] | None = None
        self._threads: list[threading.Thread] = []
        self._error: BaseException | None = None
        self._first = True

    def __enter__(self) -> _Drain:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def put(self, batch: list[bytes]) -> None:
        if self._error is not None:
            raise self._error
        data = batch[0] if len(batch) == 1 else b"".join(batch)
        if self._first:
            self._first = False
            self._write(data)
            self._check(0, data)
            self._written = len(data)
            return
        if self._writes_queue is None:
            self._writes_queue, self._checks_queue = queue.Queue(_QUEUED), queue.Queue(_QUEUED)
            for work in (self._writes, self._checks):
                thread = threading.Thread(target=work, name="roller-drain")
                thread.daemon = True
                thread.start()
                self._threads.append(thread)
        self._writes_queue.put(data)

    def finish(self) -> str:
        """The sha256 of everything put, once it is all written and read back."""
        self._stop()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def _stop(self) -> None:
        if self._writes_queue is not None:
            self._writes_queue.put(None)  # the writer then stops the checker
        for thread in self._threads:
            thread.join()
        self._writes_queue = self._checks_queue = None
        self._threads = []

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a short write to a regular file: disk full or a signal
            view = view[self._fh.write(view) :]

    def _check(self, at: int, data: bytes) -> None:
        """Read `data` back from `at`; hash it when the file holds it, else fail."""
        fd, size = self._fh.fileno(), len(data)
        back = os.pread(fd, size, at)
        while len(back) < size:  # a read may come back short (past 2 GiB on Linux)
            more = os.pread(fd, size - len(back), at + len(back))
            if not more:
                break  # the file ends early: it does not hold what was written
            back += more
        if back != data:
            name = getattr(self._fh, "name", "the file")
            raise IntegrityError(f"{name}: bytes {at}-{at + len(data)} read back unlike written")
        self._digest.update(back)

    def _writes(self) -> None:
        batches, checks = self._writes_queue, self._checks_queue
        assert batches is not None and checks is not None
        syncs: queue.Queue[bool] = queue.Queue()
        syncer = threading.Thread(target=self._syncs, args=(syncs,), name="roller-drain")
        syncer.daemon = True
        syncer.start()
        unsynced = 0
        while (data := batches.get()) is not None:
            if self._error is not None:
                continue  # emptied, so a caller blocked on a full queue goes on
            try:
                self._write(data)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                self._error = exc
                continue
            checks.put((self._written, data))
            self._written += len(data)
            unsynced += len(data)
            if unsynced >= _SYNC_EVERY and syncs.empty():  # one asked at a time
                syncs.put(True)
                unsynced = 0
        checks.put(None)
        syncs.put(False)
        syncer.join()

    def _syncs(self, syncs: queue.Queue[bool]) -> None:
        while syncs.get():
            try:
                os.fdatasync(self._fh.fileno())
            except OSError as exc:
                self._error = exc

    def _checks(self) -> None:
        checks = self._checks_queue
        assert checks is not None
        while (item := checks.get()) is not None:
            if self._error is not None:
                continue  # emptied, so the writer blocked on a full queue goes on
            try:
                self._check(*item)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                self._error = exc


def _lines(chunk: bytes) -> int:
    """`chunk.count(b"\\n")`: a record line's only newline is its last byte, which
    `find` (memchr) confirms about forty times faster than `count` walks the line."""
    first = chunk.find(b"\n")
    return 1 if first >= 0 and first == len(chunk) - 1 else chunk.count(b"\n")


def fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_unsynced(path: Path, data: bytes) -> None:
    """Write a debug file without an fsync of its own: `sync_files` follows for the lot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def sync_files(paths: Sequence[Path]) -> None:
    """Flush files written with `write_unsynced` to the disk, all at once.

    Each fsync is a disk cache flush (~4 ms on the VM measured, whether or not the file
    still had dirty pages), so a thousand response bodies took four seconds one by one.
    One `sync()` flushes them all with a single barrier."""
    if paths:
        os.sync()


def describe_file(path: Path) -> FileEntry:
    """sha256, size and line count of a file, read in blocks."""
    digest = hashlib.sha256()
    size = lines = 0
    with open(path, "rb") as fh:
        for block in _blocks(fh):
            digest.update(block)
            size += len(block)
            lines += block.count(b"\n")
    return FileEntry(sha256=digest.hexdigest(), bytes=size, lines=lines)


def _blocks(fh: BinaryIO, size: int = 1 << 20) -> Iterable[bytes]:
    while block := fh.read(size):
        yield block


def jsonl_bytes(lines: Iterable[str]) -> bytes:
    """Join already-serialized JSON documents into JSONL (one per line, LF-terminated)."""
    return b"".join(line.encode("utf-8") + b"\n" for line in lines)


def describe(data: bytes) -> FileEntry:
    return FileEntry(
        sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), lines=data.count(b"\n")
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

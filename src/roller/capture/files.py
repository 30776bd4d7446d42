"""Writing formal files safely and describing them for the manifest.

Rules kept: a formal file is written to a temporary sibling, fsynced and renamed into
place, so a reader sees the old file or the new one, never half of one; the manifest's
`files` entries are computed from the bytes actually on disk.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from roller.capture.models import FileEntry


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a crash leaves either the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def jsonl_bytes(lines: Iterable[str]) -> bytes:
    """Join already-serialized JSON documents into JSONL (one per line, LF-terminated)."""
    return b"".join(line.encode("utf-8") + b"\n" for line in lines)


def describe(data: bytes) -> FileEntry:
    return FileEntry(
        sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), lines=data.count(b"\n")
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

"""A formal file written by a forked child process, beside the caller's own work.

`WrittenBeside.start(path, chunks)` forks a child that writes `chunks` into a temporary
sibling of `path` exactly as `roller.capture.files.write_checked` does (each batch read
back and compared, hashed once, fsynced), hands its `FileEntry` back through a pipe and
leaves; it is None when no child could be started. `entry()` waits for the child and
moves the file in place: its entry, or None when the child failed (its temporary file
removed), so that the caller writes the file itself and meets the same failure, if any,
in its own process. `cancel()` ends a child not waited for and removes its file.

Finalize writes relations.jsonl so, while its own process writes calls.jsonl: the
relations' lines are made from the stages' facts alone and take ~0.5 s of Python at 10k
calls, which one process could only spend after the calls (docs/benchmarks.md, round 19).

Rules kept:
- It forks only on Linux and only while this process runs no other thread, native ones
  included (`/proc/self/task`): a fork copies the calling thread alone, so a lock another
  thread held at that moment (a TLS library's, a logging handler's, an allocator's)
  would stay held in the child for ever.
- `chunks` must be made from memory alone: the child shares its parent's open files, so
  it must not move a file offset (reads by `os.pread` would be harmless; a `seek` is not).
- The child never returns into the caller's code: it leaves by `os._exit` whatever
  happens, so it runs no atexit handler and flushes no buffer it inherited (a buffered
  file of the parent's would be written twice).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path

from roller.capture.files import move_in, temp_sibling, write_checked
from roller.capture.models import FileEntry

log = logging.getLogger("roller.capture")


def alone() -> bool:
    """Whether a child forked now would be safe: Linux, and no other thread."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class WrittenBeside:
    def __init__(self, path: Path, tmp: Path, pid: int, pipe: int) -> None:
        self.path = path
        self.tmp = tmp
        self._pid: int | None = pid
        self._pipe = pipe

    @classmethod
    def start(cls, path: Path, chunks: Iterable[bytes]) -> WrittenBeside | None:
        """A child writing `path`, or None when none could start (module docstring)."""
        if not alone():
            return None
        tmp = temp_sibling(path, "beside")
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return None
        if pid == 0:  # the child: write, report, leave
            code = 1
            try:
                os.close(read_end)
                entry = write_checked(tmp, chunks)
                os.write(write_end, entry.model_dump_json().encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        return cls(path, tmp, pid, read_end)

    def entry(self) -> FileEntry | None:
        """The file's entry once the child wrote it and it is in place; None when the
        child failed (the caller then writes the file itself)."""
        assert self._pid is not None, "waited for already"
        pipe, self._pipe = self._pipe, -1  # the file object below owns and closes it
        with os.fdopen(pipe, "rb") as reader:
            report = reader.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        code = os.waitstatus_to_exitcode(status)
        if code != 0 or not report:
            self.tmp.unlink(missing_ok=True)
            log.warning("%s: the process writing it failed (exit %s): writing it here",
                        self.path.name, code)  # fmt: skip
            return None
        move_in(self.tmp, self.path)
        log.debug("%s written by a child process", self.path.name)
        return FileEntry.model_validate_json(report)

    def cancel(self) -> None:
        """End a child not waited for, and remove what it wrote (no-op once waited)."""
        if self._pid is None:
            return
        with contextlib.suppress(ProcessLookupError):  # (a zombie is still there to kill)
            os.kill(self._pid, signal.SIGKILL)
        os.waitpid(self._pid, 0)
        self._pid = None
        if self._pipe >= 0:  # (not when `entry` was interrupted after taking it)
            os.close(self._pipe)
            self._pipe = -1
        self.tmp.unlink(missing_ok=True)

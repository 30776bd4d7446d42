"""Finalize's worker processes and the pipes between them and the finalizing process.

A worker (`python -m roller.finalize.workers --standby`, `Spare.start`) spends ~0.45 s
importing finalize before it can decode a call (docs/benchmarks.md, "Finalize at scale,
round 8"). So it is started before it has a job: it imports, says `READY` on its stdout
and reads its job from its stdin (`await_job`); `Spare.hand` gives it. A long capture's
workers are started before the tape is indexed (`Standby.start`), so their imports
overlap the index, which runs on one core; others when the first pass begins. Once
handed its job, a worker says on the same stdout how far it got (`Progress`): the bytes
and the records of its records file written whole so far, so the finalizing process can
take them while it still works (`Spare.progress`).

Rules kept:
- Nothing waits on a spare unless asked to (`wait`, and then for a time given): whether
  it is ready or left is read from a pipe that does not block (not `select.select`,
  which fails on a descriptor numbered past 1023).
- A spare that left (its stdout ended before it said it is ready, or its stdin is closed
  when handed its job) is killed and reaped, and says so (`gone`, `hand`). Spares not
  taken are killed and reaped (`close`; `Standby` is a context manager).
- A spare whose finalizing process died reads the end of its stdin and exits.
- A worker never waits on its progress either: a report the pipe has no room for is
  left out (each report says everything written so far, so the next one, or the
  worker's exit, says it instead).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

STANDBY_ARGUMENT: Final = "--standby"  # a worker's argument: wait for the job on stdin
READY: Final = b"ready\n"  # what a worker on standby says once it imported finalize
_PROGRESS: Final = struct.Struct("<QQ")  # bytes, records written whole (a pipe writes it at once)

log = logging.getLogger("roller.finalize")


def spawn(errors: IO[bytes]) -> subprocess.Popen[bytes]:
    """`python -m roller.finalize.workers --standby` from the `roller` this one imports,
    its stdin and stdout pipes, its stderr `errors`."""
    package_root = str(Path(__file__).resolve().parents[2])  # where `roller` imports from
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "roller.finalize.workers", STANDBY_ARGUMENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        env=env,
    )


class Progress:
    """A worker's side of its stdout once it has its job: how far it got."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        os.set_blocking(fd, False)  # never waits for the finalizing process to read

    def say(self, size: int, records: int) -> None:
        """Its records file holds `records` whole records in its first `size` bytes."""
        with contextlib.suppress(BlockingIOError):  # no room: the next report says it
            os.write(self._fd, _PROGRESS.pack(size, records))


def await_job() -> tuple[list[str], Progress] | None:
    """A spare's side: say `READY`, then the job's arguments as its stdin gives them, and
    where to say its progress (None at the end of its stdin: not needed)."""
    with contextlib.suppress(BrokenPipeError):  # the finalizing process is gone
        sys.stdout.buffer.write(READY)
        sys.stdout.buffer.flush()
    said = os.dup(sys.stdout.fileno())
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # nothing else is said there
    os.close(devnull)
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return None
    return [str(a) for a in json.loads(line)], Progress(said)


@dataclass
class Spare:
    """A worker process: importing, waiting for its job on stdin, or working on it."""

    process: subprocess.Popen[bytes]
    errors: IO[bytes]  # its stderr
    said_ready: bool = False
    gone: bool = False  # its stdout ended before it said it is ready
    _said: bytes = b""  # progress bytes read, not yet a whole report

    @classmethod
    def start(cls, root: Path) -> Spare:
        """A worker started now, its stderr in an anonymous file under `root` (OSError
        when it cannot start)."""
        errors = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed with the spare
        try:
            process = spawn(errors)
        except OSError:
            errors.close()
            raise
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)  # `ready` asks, never waits
        return cls(process, errors)

    def ready(self) -> bool:
        """Whether it said it is ready (asked without waiting: its stdout does not block);
        `gone` once its stdout ended before."""
        said = self.process.stdout
        if not (self.said_ready or self.gone) and said is not None and not said.closed:
            with contextlib.suppress(BlockingIOError):  # nothing said yet
                got = os.read(said.fileno(), len(READY))
                self.said_ready = got == READY
                self.gone = not self.said_ready
        return self.said_ready

    def wait(self, seconds: float) -> bool:
        """`ready`, waiting up to `seconds` for it to say so or leave (`poll`, which
        takes a descriptor of any number)."""
        said = self.process.stdout
        if said is not None and not said.closed and not (self.said_ready or self.gone):
            watch = select.poll()
            watch.register(said.fileno(), select.POLLIN)
            watch.poll(max(0, round(seconds * 1000)))  # readable, or ended, or not yet
        return self.ready()

    def hand(self, job_file: Path, out: Path) -> bool:
        """Give it its job (once ready); False when it left (its stdin is closed). Its
        stdout then says its progress."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps([str(job_file), str(out)]).encode() + b"\n")
            self.process.stdin.close()
        except OSError:  # BrokenPipeError: it exited
            return False
        os.set_blocking(self.process.stdout.fileno(), True)  # `progress` waits for it
        return True

    def progress(self) -> tuple[int, int] | None:
        """Waits for the worker's next progress report: (bytes, records) written whole so
        far; None once its stdout ended (it exited)."""
        said = self.process.stdout
        assert said is not None
        while True:
            got = os.read(said.fileno(), 1 << 16)
            if not got:
                return None
            self._said += got
            whole = len(self._said) - len(self._said) % _PROGRESS.size
            if whole:  # the last report says everything the earlier ones said
                last = _PROGRESS.unpack_from(self._said, whole - _PROGRESS.size)
                self._said = self._said[whole:]
                return last

    def exit_code(self) -> int:
        """Its exit code, once it exited (waits for it)."""
        return self.process.wait()

    def said_on_stderr(self) -> str:
        """The last line it wrote on its stderr ("no output" without one)."""
        self.errors.seek(0)
        said = self.errors.read().decode(errors="replace")
        return (said.strip().splitlines()[-1:] or ["no output"])[0][:300]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a write it did not take
                    pipe.close()
        self.errors.close()


class Standby:
    """Spares started before they are needed (module docstring); a context manager that
    kills those not taken."""

    def __init__(self, spares: list[Spare]) -> None:
        self.spares = spares

    @classmethod
    def start(cls, root: Path, count: int) -> Standby:
        """`count` spares; fewer when one cannot start (then the first pass starts its
        workers itself, and says why when they cannot start either)."""
        spares: list[Spare] = []
        for _ in range(count):
            try:
                spares.append(Spare.start(root))
            except OSError as exc:
                log.debug("finalize: no worker on standby (%s)", exc)
                break
        return cls(spares)

    def take(self, count: int) -> list[Spare]:
        """Up to `count` spares, ready or not."""
        taken, self.spares = self.spares[:count], self.spares[count:]
        return taken

    def close(self) -> None:
        """Kill the spares not taken."""
        while self.spares:
            self.spares.pop().kill()

    def __enter__(self) -> Standby:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Finalize's worker processes started before they have a job: the standby.

A worker (`python -m roller.finalize.workers`, `spawn`) spends ~0.45 s importing finalize
before it decodes a call (docs/benchmarks.md, "Finalize at scale, round 8"), while the
finalizing process indexes the tape on one core and leaves the other idle.
`Standby.start` starts workers then, with `STANDBY_ARGUMENT`: each imports, says `READY`
on its stdout and waits for its job on its stdin (`await_job`); `Spare.hand` gives it,
and from then on it is a worker like any other (`roller.finalize.workers`).

Rules kept:
- Nothing waits on a spare: whether it is ready is read from a pipe that does not block
  (not `select`, which fails on a descriptor numbered past 1023), and a spare handed its
  job before it said so decodes it the same (it no longer says so: its stdout is closed).
- A spare that left (its stdin is closed) is killed and reaped, and `hand` says so: its
  caller starts a worker then. Spares not taken are killed and reaped (`close`; `Standby`
  is a context manager).
- A spare whose finalizing process died reads the end of its stdin and exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

STANDBY_ARGUMENT: Final = "--standby"  # a worker's argument: wait for the job on stdin
READY: Final = b"ready\n"  # what a worker on standby says once it imported finalize

log = logging.getLogger("roller.finalize")


def spawn(args: list[str], errors: IO[bytes], *, waits: bool) -> subprocess.Popen[bytes]:
    """`python -m roller.finalize.workers ARGS` from the `roller` this one imports; with
    `waits`, its stdin and stdout are pipes (a spare)."""
    package_root = str(Path(__file__).resolve().parents[2])  # where `roller` imports from
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    pipe = subprocess.PIPE if waits else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-m", "roller.finalize.workers", *args],
        stdin=pipe,
        stdout=pipe,
        stderr=errors,
        env=env,
    )


def await_job() -> list[str] | None:
    """A spare's side: say `READY`, then the job's arguments as its stdin gives them
    (None at its end: not needed)."""
    with contextlib.suppress(BrokenPipeError):  # handed its job before it said so
        sys.stdout.buffer.write(READY)
        sys.stdout.buffer.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # nothing else is said there
    os.close(devnull)
    line = sys.stdin.buffer.readline()
    return [str(a) for a in json.loads(line)] if line.strip() else None


@dataclass
class Spare:
    """A worker on standby: started, importing or waiting for its job on stdin."""

    process: subprocess.Popen[bytes]
    errors: IO[bytes]  # its stderr
    said_ready: bool = False

    def ready(self) -> bool:
        """Whether it said it is ready (asked without waiting: its stdout does not block)."""
        said = self.process.stdout
        if not self.said_ready and said is not None and not said.closed:
            with contextlib.suppress(BlockingIOError):  # nothing said yet
                self.said_ready = os.read(said.fileno(), len(READY)) == READY
        return self.said_ready

    def hand(self, job_file: Path, out: Path) -> bool:
        """Give it its job; False when it left (its stdin is closed)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps([str(job_file), str(out)]).encode() + b"\n")
            self.process.stdin.close()
        except OSError:  # BrokenPipeError: it exited
            return False
        finally:
            self.process.stdout.close()
        return True

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
    """Spares started at once (module docstring); a context manager that kills those
    not taken."""

    def __init__(self, spares: list[Spare]) -> None:
        self.spares = spares

    @classmethod
    def start(cls, root: Path, count: int) -> Standby:
        """`count` spares, their stderr in anonymous files under `root`; fewer when one
        cannot start (then the caller starts its workers as it needs them)."""
        spares: list[Spare] = []
        for _ in range(count):
            errors = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed with the spare
            try:
                process = spawn([STANDBY_ARGUMENT], errors, waits=True)
            except OSError as exc:
                log.debug("finalize: no worker on standby (%s)", exc)
                errors.close()
                break
            assert process.stdout is not None
            os.set_blocking(process.stdout.fileno(), False)  # `ready` asks, never waits
            spares.append(Spare(process, errors))
        return cls(spares)

    def ready(self, workers: int) -> bool:
        """Whether `workers` spares can be taken, each ready for its job already."""
        return 0 < workers <= len(self.spares) and all(
            spare.ready() for spare in self.spares[:workers]
        )

    def take(self) -> Spare | None:
        """A spare, ready or not; None when there is none left."""
        return self.spares.pop(0) if self.spares else None

    def close(self) -> None:
        """Kill the spares not taken."""
        while self.spares:
            self.spares.pop().kill()

    def __enter__(self) -> Standby:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

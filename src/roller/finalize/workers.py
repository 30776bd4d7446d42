"""Finalize's first pass spread over processes, for a long capture.

`first_passes(tape, first, root, processes)` yields every call's `Passed`
(`roller.finalize.first_pass`) in tape order, exactly what `first.call` gives for each
exchange in turn. With more than one process the calls are cut into contiguous blocks
(`blocks`): this process decodes the first, each other block is decoded by a worker
process (`python -m roller.finalize.workers JOB OUT`, started at once, reading the tape
from disk through `TapeIndex.reopen`), whose records this process takes in order once it
is done with the blocks before. Why it is the same: a call's first pass reads only its
own exchange, its number and the per-conversation caches, which give what a fresh
reading gives; a block's first call in a worker is read afresh.

Rules kept:
- Nothing is lost to a worker: one that fails (it exits non-zero, is killed, cannot
  start, or does not report its whole block, of the size its file has) has its block
  decoded here instead, and a warning names it; a worker still running when the pass
  is abandoned is killed. Its files live in a temporary directory under the attempt,
  removed after. A record that cannot be read back once taken (its file changed on
  disk since) is an `IntegrityError`: finalize again.
- The tape index's problems come out as one process would report them: a worker
  reports the shape problems its index found typing its exchanges' metas, which this
  index adopts (`TapeIndex.checked_elsewhere`: shapes are reported in tape order,
  whoever found them), and which of its calls have a body reference (a `bref` frame),
  resolved again here, in order, so one that does not resolve is reported where a
  single process reports it.
- Only the built-in harness registry is carried to a worker (a fresh process has no
  other): with harnesses registered or removed in this process, one process decodes all.

How many processes (`process_count`): `ROLLER_FINALIZE_PROCESSES` when set (a whole
number ≥ 1; 1: this process alone), else one per CPU this process may run on, at most
`MAX_PROCESSES`, for a capture of at least `PARALLEL_MIN_CALLS` calls (a worker's start,
importing finalize, costs ~0.45 s: about `STARTUP_CALLS` calls' first pass on the
machine measured, docs/benchmarks.md, "Finalize at scale, round 8"); the first block
is larger by that much, so the blocks finish together.

Workers on standby (`standby`, `roller.finalize.standby`): before the tape is indexed, a
tape of at least `STANDBY_MIN_BYTES` (or any, with `ROLLER_FINALIZE_PROCESSES` above 1)
has its workers started at once, so that their imports overlap the index, which runs on
one core. When every worker needed is ready by the time the blocks are cut, the blocks
are equal (no start to make up for). A standby not needed is killed; one that left is
replaced by a worker started then. What a worker decodes does not depend on when it
started.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from math import ceil
from pathlib import Path
from typing import IO, Final

from roller.capture.body_refs import CaptureBodies
from roller.capture.layout import AttemptPaths
from roller.capture.tape import TapeIndex, TapeSource
from roller.capture.tape.framing import Place
from roller.errors import ConfigError, IntegrityError
from roller.finalize.first_pass import FirstPass, Passed
from roller.finalize.standby import STANDBY_ARGUMENT, Standby, await_job, spawn
from roller.finalize.tool_ids import NativeToolIds
from roller.harnesses.registry import builtin

log = logging.getLogger("roller.finalize")

PROCESSES_VARIABLE: Final = "ROLLER_FINALIZE_PROCESSES"
PARALLEL_MIN_CALLS: Final = 2000
MAX_PROCESSES: Final = 4
STARTUP_CALLS: Final = 1000
STANDBY_MIN_BYTES: Final = 128 << 20  # ~1,700 calls of finalize_scale's (76 KiB bodies)


def process_count(calls: int, environ: Mapping[str, str] = os.environ) -> int:
    """How many processes decode a capture of `calls` calls (module docstring)."""
    wanted = _setting(environ)
    if wanted is None:
        if calls < PARALLEL_MIN_CALLS:
            return 1
        wanted = min(_cpus(), MAX_PROCESSES)
    return wanted if builtin() else 1


def _setting(environ: Mapping[str, str]) -> int | None:
    """`ROLLER_FINALIZE_PROCESSES`, None when unset."""
    setting = environ.get(PROCESSES_VARIABLE, "").strip()
    if not setting:
        return None
    if not setting.isdigit() or int(setting) < 1:
        raise ConfigError(f"{PROCESSES_VARIABLE} must be a whole number ≥ 1, not {setting!r}")
    return int(setting)


def standby(root: Path, tape: Path, environ: Mapping[str, str] = os.environ) -> Standby:
    """Workers on standby for the attempt at `root` whose tape is `tape`: as many as
    `process_count` would ask for beside this process, when the tape is long enough to
    be spread (or `ROLLER_FINALIZE_PROCESSES` asks for them)."""
    wanted = _setting(environ)
    if wanted is None:
        wanted = min(_cpus(), MAX_PROCESSES) if _size(tape) >= STANDBY_MIN_BYTES else 1
    return Standby.start(root, wanted - 1 if builtin() else 0)


def _size(tape: Path) -> int:
    """The bytes of the tape's files (0 without a tape)."""
    try:
        with os.scandir(tape) as entries:
            return sum(e.stat().st_size for e in entries if e.is_file())
    except OSError:
        return 0


def blocks(calls: int, processes: int, startup: int = STARTUP_CALLS) -> list[tuple[int, int]]:
    """The contiguous blocks of `calls` calls for `processes` processes, the first one's
    (this process's) larger by a worker's start (`startup` calls, at most a sixth of the
    calls a process would get); no empty block."""
    if processes <= 1 or calls < 2:
        return [(0, calls)]
    share = calls / processes
    ahead = min(startup, share / 6) * (processes - 1) / processes
    first = min(calls, ceil(share + ahead))  # never smaller than a later block
    rest = processes - 1
    cuts = [first + round((calls - first) * k / rest) for k in range(rest + 1)]
    spans = [(0, first), *pairwise(cuts)]
    return [(lo, hi) for lo, hi in spans if hi > lo]


def first_passes(
    tape: TapeIndex, first: FirstPass, root: Path, processes: int, spares: Standby | None = None
) -> Iterator[Passed]:
    """Every call's `Passed`, in tape order (module docstring); workers are taken from
    `spares` first (the rest of them killed)."""
    spares = spares if spares is not None else Standby([])
    started = spares.ready(processes - 1)
    spans = blocks(len(tape.exchanges), processes, 0 if started else STARTUP_CALLS)
    if len(spans) == 1:
        spares.close()
        for n, ref in enumerate(tape.exchanges):
            yield first.call(n, tape.load(ref))
        return
    with tempfile.TemporaryDirectory(dir=root, prefix=".finalize-workers-") as scratch:
        source = tape.source()
        job = _Job(source, first.harness, first.capture_scope, first.tool_ids, root)
        workers: list[_Worker] = []
        try:
            for span in spans[1:]:
                workers.append(_Worker.start(job, span, Path(scratch), spares))
            spares.close()  # any not needed, now: one still importing takes a core
            for n in range(*spans[0]):
                yield first.call(n, tape.load(tape.exchanges[n]))
            for worker in workers:
                yield from _taken(worker, tape, first)
        finally:
            spares.close()  # (when a worker's start failed before the one above)
            for worker in workers:
                worker.stop()


def _taken(worker: _Worker, tape: TapeIndex, first: FirstPass) -> Iterator[Passed]:
    """A worker's block: its records once it finished whole, else decoded here."""
    finished = worker.finished()
    if finished is None:
        for n in range(*worker.span):
            yield first.call(n, tape.load(tape.exchanges[n]))
        return
    records, report = finished
    log.debug("finalize: calls %d-%d decoded by a worker process", *worker.span)
    referenced = set(report.referenced)
    with records:
        for n in range(*worker.span):
            if n in referenced:  # an unresolved reference is reported here, in order
                tape.request_body(tape.exchanges[n])
            try:
                passed = pickle.load(records)
            except Exception as exc:  # noqa: BLE001 - its bytes changed on disk since
                raise IntegrityError(
                    f"finalize: call {n}'s record, as a worker process wrote it, cannot "
                    f"be read back ({type(exc).__name__}): finalize the attempt again"
                ) from None
            yield passed
    tape.checked_elsewhere(range(*worker.span), report.shapes)


@dataclass(frozen=True, slots=True)
class _Report:
    """What a worker says once its block's records are all written (`_done`)."""

    calls: int
    size: int  # the bytes of its records file
    shapes: list[tuple[Place, str]]  # its index's shape problems (`TapeIndex.shape_problems`)
    referenced: list[int]  # its calls whose request body is a body reference


@dataclass(frozen=True, slots=True)
class _Job:
    """What a worker is handed (pickled): the tape, and what `FirstPass` is made of."""

    source: TapeSource
    harness: str
    capture_scope: str
    tool_ids: NativeToolIds | None
    root: Path  # the attempt directory (its published capture resolves body references)


@dataclass
class _Worker:
    span: tuple[int, int]
    process: subprocess.Popen[bytes] | None
    out: Path
    errors: IO[bytes]  # its stderr

    @classmethod
    def start(cls, job: _Job, span: tuple[int, int], scratch: Path, spares: Standby) -> _Worker:
        """The worker decoding `span`: a spare taken from `spares` and handed its job,
        else one started now."""
        name = f"calls-{span[0]}-{span[1]}"
        job_file, out = (scratch / f"{name}.{ext}" for ext in ("job", "out"))
        with job_file.open("wb") as fh:
            pickle.dump((job, span), fh, protocol=pickle.HIGHEST_PROTOCOL)
        spare = spares.take()
        if spare is not None:
            if spare.hand(job_file, out):
                return cls(span, spare.process, out, spare.errors)
            log.debug("finalize: the worker on standby for calls %d-%d had left", *span)
            spare.kill()
        errors = tempfile.TemporaryFile(dir=scratch)  # noqa: SIM115 - closed by `stop`
        try:
            process = spawn([str(job_file), str(out)], errors, waits=False)
        except OSError as exc:
            log.warning("finalize: no worker for calls %d-%d (%s): decoding them here", *span, exc)
            process = None
        return cls(span, process, out, errors)

    def finished(self) -> tuple[IO[bytes], _Report] | None:
        """The worker's records (positioned at its first) and its report, once it exited
        having written them all; None when it did not."""
        if self.process is None:
            return None
        code = self.process.wait()
        report = self._report() if code == 0 else None
        if report is not None:
            return self.out.open("rb"), report
        self.errors.seek(0)
        said = self.errors.read().decode(errors="replace")
        tail = said.strip().splitlines()[-1:] or ["no output"]
        log.warning(
            "finalize: the worker for calls %d-%d failed (exit %s: %s): decoding them here",
            *self.span, code, tail[0][:300],
        )  # fmt: skip
        return None

    def _report(self) -> _Report | None:
        """The worker's report (`_done`, written last), if it says it wrote its block."""
        try:
            with _done(self.out).open("rb") as fh:
                report = pickle.load(fh)
        except Exception:  # noqa: BLE001 - any unreadable report: the block is decoded here
            return None
        whole = (
            isinstance(report, _Report)
            and isinstance(report.shapes, list)
            and isinstance(report.referenced, list)
            and report.calls == self.span[1] - self.span[0]
            and report.size == self.out.stat().st_size
        )  # (a worker of another roller, changed on disk since, reports otherwise)
        return report if whole else None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.errors.close()


def _done(out: Path) -> Path:
    return out.with_suffix(".done")


def decode_block(job: _Job, span: tuple[int, int], out: Path) -> None:
    """A worker's work: its block's records in `out`, then, once they are all there,
    their count in `_done(out)`."""
    first = FirstPass(job.harness, job.capture_scope, job.tool_ids)
    with (
        CaptureBodies(AttemptPaths(job.root)) as earlier,
        TapeIndex.reopen(job.source, resolve=earlier) as tape,
        out.open("wb") as fh,
    ):
        pickler = pickle.Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL)
        referenced: list[int] = []
        for n in range(*span):
            ref = tape.exchanges[n]
            if tape.referenced(ref):
                referenced.append(n)
            pickler.dump(first.call(n, tape.load(ref)))
            pickler.clear_memo()  # each record on its own: read back one at a time
        fh.flush()
        report = _Report(span[1] - span[0], fh.tell(), tape.shape_problems(), referenced)
    with _done(out).open("wb") as fh:
        pickle.dump(report, fh, protocol=pickle.HIGHEST_PROTOCOL)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def main(argv: list[str]) -> int:
    """`JOB OUT`, or `--standby`: the same read from stdin (`await_job`)."""
    job = await_job() if argv == [STANDBY_ARGUMENT] else argv
    if job is None:
        return 0  # not needed after all
    job_file, out = (Path(a) for a in job)
    with job_file.open("rb") as fh:
        job, span = pickle.load(fh)
    decode_block(job, span, out)
    return 0


if __name__ == "__main__":
    # Run as the module itself, not as `__main__`: what it pickles names its classes
    # where the finalizing process finds them.
    from roller.finalize.workers import main as worker_main

    sys.exit(worker_main(sys.argv[1:]))

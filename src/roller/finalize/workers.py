"""Finalize's first pass spread over processes, for a long capture.

`first_passes(tape, first, root, processes)` yields every call's `Passed`
(`roller.finalize.first_pass`) in tape order, exactly what `first.call` gives for each
exchange in turn. With more than one process, worker processes (`python -m
roller.finalize.workers --standby`, `roller.finalize.standby`) decode blocks of the
calls, reading the tape from disk through `TapeIndex.reopen`
(`roller.finalize.worker_block`). Why it is the same: a call's first pass reads only
its own exchange, its number and the per-conversation caches, which give what a fresh
reading gives; a block's first call in a worker is read afresh.

How the calls are shared:
- A worker is handed its block only once it is ready (it imported finalize, ~0.45 s:
  docs/benchmarks.md, "Finalize at scale, round 8"). Until every worker is, this
  process decodes calls itself, looking at them every `CHECK_EVERY` calls; then the
  calls left are cut into contiguous blocks (`blocks`), the first this process's, and
  each other block handed to a worker. Workers are never waited for, but with
  `ROLLER_FINALIZE_PROCESSES` (`awaited`): the processes it names decode the calls,
  however short the capture (a worker not ready after `AWAIT_SECONDS` is warned of,
  and looked at as above).
- This process takes each worker's records in order, as the worker writes them, once
  it is done with the blocks before; its own block is smaller (`TAKEN_SHARE`), so
  that all end together.
- Workers on standby (`standby`): a tape of at least `STANDBY_MIN_BYTES` (or any, with
  `ROLLER_FINALIZE_PROCESSES` above 1) has its workers started before it is indexed,
  so that their imports overlap the index, which runs on one core; otherwise they are
  started as the first pass begins.

Rules kept:
- Nothing is lost to a worker: one that cannot start, leaves before it is ready or
  before its job, or fails midway (it exits non-zero, is killed, or does not report
  its whole block, of the size its file has) has the calls it did not write decoded
  here, and a warning names it; the records it wrote whole stand. Workers still
  running when the pass ends or is abandoned are killed; those not needed too. Their
  files live in a temporary directory under the attempt, removed after. A record that
  cannot be read back once taken (its file changed on disk since) is an
  `IntegrityError`: finalize again.
- The tape index's problems come out as one process would report them: a worker that
  wrote its whole block reports the shape problems its index found typing its
  exchanges' metas, which this index adopts (`TapeIndex.checked_elsewhere`: shapes are
  reported in tape order, whoever found them; the metas of a failed worker's calls
  are typed here), and each of its calls with a body reference (a `bref` frame) has it
  resolved again here, in order, so one that does not resolve is reported where a
  single process reports it.
- Only the built-in harness registry is carried to a worker (a fresh process has no
  other): with harnesses registered or removed in this process, one process decodes all.

How many processes (`process_count`): `ROLLER_FINALIZE_PROCESSES` when set (a whole
number ≥ 1; 1: this process alone), else one per CPU this process may run on, at most
`MAX_PROCESSES`, for a capture of at least `PARALLEL_MIN_CALLS` calls.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from itertools import pairwise
from math import floor
from pathlib import Path
from typing import Final

from roller.capture.tape import TapeIndex
from roller.errors import ConfigError
from roller.finalize.first_pass import FirstPass, Passed
from roller.finalize.standby import STANDBY_ARGUMENT, Spare, Standby, await_job
from roller.finalize.worker_block import Handed, Job, decode_block
from roller.harnesses.registry import builtin

log = logging.getLogger("roller.finalize")

PROCESSES_VARIABLE: Final = "ROLLER_FINALIZE_PROCESSES"
PARALLEL_MIN_CALLS: Final = 2000
MAX_PROCESSES: Final = 4
STANDBY_MIN_BYTES: Final = 128 << 20  # ~1,700 calls of finalize_scale's (76 KiB bodies)
CHECK_EVERY: Final = 16  # calls decoded here between two looks at workers still starting
AWAIT_SECONDS: Final = 60  # how long workers asked for (`awaited`) are waited for at most
# How much smaller this process's block is, per worker, than a worker's: it takes the
# workers' records once its own block is done (20–28 µs a record: unpickled, kept in the
# facts and the spill), while a worker decodes a call ~8% slower than this process
# (330 µs against 306, finalize_scale's 10k capture, both running). Of 0, 0.05 and 0.1,
# 0.05 ended pass one first (docs/benchmarks.md, round 21).
TAKEN_SHARE: Final = 0.05


def process_count(calls: int, environ: Mapping[str, str] = os.environ) -> int:
    """How many processes decode a capture of `calls` calls (module docstring)."""
    wanted = _setting(environ)
    if wanted is None:
        if calls < PARALLEL_MIN_CALLS:
            return 1
        wanted = min(_cpus(), MAX_PROCESSES)
    return wanted if builtin() else 1


def awaited(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the first pass waits for its workers to be ready before it decodes a call:
    when `ROLLER_FINALIZE_PROCESSES` names how many processes (else it decodes calls
    while they start, and a short capture may need none of them)."""
    return _setting(environ) is not None


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


def blocks(start: int, calls: int, workers: int) -> list[tuple[int, int]]:
    """Calls `start` to `calls` cut into contiguous blocks, this process's first and
    `workers` more, one per worker: this process's smaller by what taking the workers'
    records costs it (`TAKEN_SHARE` of decoding a call, per worker), so that all finish
    together; no worker is handed an empty block (this process's may be)."""
    remaining = calls - start
    workers = max(0, min(workers, remaining - 1))
    if workers == 0:
        return [(start, calls)]
    each = remaining / (workers + 1 - workers * TAKEN_SHARE)  # >= 1: blocks of a call or more
    cuts = [calls - floor(each * k + 0.5) for k in range(workers, -1, -1)]
    return [(start, cuts[0]), *pairwise(cuts)]


def first_passes(
    tape: TapeIndex,
    first: FirstPass,
    root: Path,
    processes: int,
    spares: Standby | None = None,
    *,
    awaited: bool = False,
) -> Iterator[Passed]:
    """Every call's `Passed`, in tape order (module docstring): `processes` - 1 workers
    taken from `spares` (the rest of them killed) or started now; with `awaited`, waited
    for before the first call is decoded (`AWAIT_SECONDS` at most)."""
    spares = spares if spares is not None else Standby([])
    calls = len(tape.exchanges)
    crew = _crew(spares, processes - 1 if calls >= 2 else 0, root)
    n = 0
    try:
        deadline = time.monotonic() + AWAIT_SECONDS
        for spare in crew if awaited else ():
            if not spare.wait(deadline - time.monotonic()) and not spare.gone:
                log.warning(
                    "finalize: a worker process was not ready after %d s: decoding calls "
                    "here until it is",
                    AWAIT_SECONDS,
                )
        while crew:
            crew = [spare for spare in crew if _present(spare)]
            if n >= calls or all(spare.ready() for spare in crew):
                break
            for k in range(n, min(n + CHECK_EVERY, calls)):
                yield first.call(k, tape.load(tape.exchanges[k]))
            n = min(n + CHECK_EVERY, calls)
        spans = blocks(n, calls, len(crew))
        for spare in crew[len(spans) - 1 :]:  # fewer calls left than a block each
            spare.kill()
        crew = crew[: len(spans) - 1]
        if not crew:
            for k in range(n, calls):
                yield first.call(k, tape.load(tape.exchanges[k]))
            return
        yield from _spread(tape, first, root, spans, crew)
    finally:
        for spare in crew:
            spare.kill()


def _crew(spares: Standby, wanted: int, root: Path) -> list[Spare]:
    """`wanted` workers: spares taken from the standby (the rest killed), then workers
    started now; fewer when one cannot start (a warning says why)."""
    crew = spares.take(wanted)
    spares.close()  # any not needed, now: one still importing takes a core
    for _ in range(wanted - len(crew)):
        try:
            crew.append(Spare.start(root))
        except OSError as exc:
            log.warning("finalize: no worker process (%s): decoding its calls here", exc)
    return crew


def _present(spare: Spare) -> bool:
    """False (the spare killed, and a warning saying so) when it left before it was
    ready."""
    if spare.ready() or not spare.gone:
        return True
    log.warning(
        "finalize: a worker process left before it was ready (exit %s: %s): "
        "decoding its calls here",
        spare.exit_code(), spare.said_on_stderr(),
    )  # fmt: skip
    spare.kill()
    return False


def _spread(
    tape: TapeIndex, first: FirstPass, root: Path, spans: list[tuple[int, int]], crew: list[Spare]
) -> Iterator[Passed]:
    """This process's block decoded here, each later one handed to a worker of `crew`
    (ready) and its records taken as the worker writes them."""
    with tempfile.TemporaryDirectory(dir=root, prefix=".finalize-workers-") as scratch:
        job = Job(tape.source(), first.harness, first.capture_scope, first.tool_ids, root)
        workers = [
            Handed.give(spare, job, span, Path(scratch))
            for spare, span in zip(crew, spans[1:], strict=True)
        ]
        for n in range(*spans[0]):
            yield first.call(n, tape.load(tape.exchanges[n]))
        for worker in workers:
            yield from _taken(worker, tape, first)


def _taken(worker: Handed, tape: TapeIndex, first: FirstPass) -> Iterator[Passed]:
    """A worker's block: its records as it writes them; once it failed, the rest of its
    calls decoded here."""
    n, stop = worker.span
    for passed, referenced in worker.records():
        if referenced:  # one that does not resolve is reported here, in order
            tape.request_body(tape.exchanges[n])
        yield passed
        n += 1
    report = worker.report
    if report is not None and n == stop:
        log.debug("finalize: calls %d-%d decoded by a worker process", *worker.span)
        tape.checked_elsewhere(range(*worker.span), report.shapes)
        return
    log.warning(
        "finalize: the worker for calls %d-%d failed after %d of them (%s): decoding the "
        "rest here",
        *worker.span, n - worker.span[0], worker.failure(),
    )  # fmt: skip
    for k in range(n, stop):  # the calls not taken
        yield first.call(k, tape.load(tape.exchanges[k]))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def main(argv: list[str]) -> int:
    """`--standby`: the job, read from stdin (`await_job`)."""
    if argv != [STANDBY_ARGUMENT]:
        print(f"usage: python -m roller.finalize.workers {STANDBY_ARGUMENT}", file=sys.stderr)
        return 2
    handed = await_job()
    if handed is None:
        return 0  # not needed after all
    (job_file, out), progress = handed
    with Path(job_file).open("rb") as fh:
        job, span = pickle.load(fh)
    decode_block(job, span, Path(out), progress)
    return 0


if __name__ == "__main__":
    # Run as the module itself, not as `__main__`: what it pickles names its classes
    # where the finalizing process finds them.
    from roller.finalize.workers import main as worker_main

    sys.exit(worker_main(sys.argv[1:]))

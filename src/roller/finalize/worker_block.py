"""One block of calls handed to a finalize worker process: its job, its records, its report.

The finalizing process hands a worker (`roller.finalize.standby.Spare`, ready) a `Job`:
the tape as `TapeIndex.reopen` reads it, what `FirstPass` is made of, and its block of
calls (`Handed.give`). The worker decodes them in order (`decode_block`), each call's
`Passed` pickled into its records file with whether the call's request body is a body
reference (this process resolves those again, in order, without unpacking every tape
ref: ~7 µs each). It says every `PROGRESS_EVERY` calls how many bytes and records it
wrote whole (`Progress`), and once they are all there writes its `Report` beside them
(`.done`): their count and size, and the shape problems its index found. The
finalizing process takes the records as they are said to be written (`Handed.records`),
while the worker works on.

Rules kept:
- A record is taken only once the worker said it wrote it whole (or, at its exit, its
  report says so); one that cannot be read back then (its file changed on disk since)
  is an `IntegrityError`: finalize again. The records of a worker that failed midway
  end early (`Handed.report` stays None): those taken stand, the rest are decoded by
  the finalizing process.
- A record's wire identity travels as its fields' values, not as a `WireIdentity`: a
  dataclass pickles and unpickles through a Python call per field (a record 12 µs to
  pickle and 7.8 to unpickle; 6 and 2.5 without, docs/benchmarks.md, round 21). The
  reader makes one `WireIdentity` per participant, reused while its values are equal,
  as `KeptFacts` keeps them anyway.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, Final

from roller.capture.body_refs import CaptureBodies
from roller.capture.layout import AttemptPaths
from roller.capture.tape import TapeIndex, TapeSource
from roller.capture.tape.framing import Place
from roller.errors import IntegrityError
from roller.finalize.first_pass import FirstPass, Passed
from roller.finalize.standby import Progress, Spare
from roller.finalize.tool_ids import NativeToolIds
from roller.identity import WireIdentity

PROGRESS_EVERY: Final = 32  # calls a worker decodes between two reports of its progress

_identity_values = attrgetter(*(f.name for f in fields(WireIdentity)))  # in field order


@dataclass(frozen=True, slots=True)
class Report:
    """What a worker says once its block's records are all written (`.done`)."""

    calls: int
    size: int  # the bytes of its records file
    shapes: list[tuple[Place, str]]  # its index's shape problems (`TapeIndex.shape_problems`)


@dataclass(frozen=True, slots=True)
class Job:
    """What a worker is handed (pickled): the tape, and what `FirstPass` is made of."""

    source: TapeSource
    harness: str
    capture_scope: str
    tool_ids: NativeToolIds | None
    root: Path  # the attempt directory (its published capture resolves body references)


@dataclass
class Handed:
    """A worker handed its block (`spare` None: it had left, the block is decoded here)."""

    span: tuple[int, int]
    spare: Spare | None
    out: Path
    report: Report | None = None  # set once its records were all taken

    @classmethod
    def give(cls, spare: Spare, job: Job, span: tuple[int, int], scratch: Path) -> Handed:
        name = f"calls-{span[0]}-{span[1]}"
        job_file, out = (scratch / f"{name}.{ext}" for ext in ("job", "out"))
        with job_file.open("wb") as fh:
            pickle.dump((job, span), fh, protocol=pickle.HIGHEST_PROTOCOL)
        return cls(span, spare if spare.hand(job_file, out) else None, out)

    def records(self) -> Iterator[tuple[Passed, bool]]:
        """Its records, each once the worker wrote it whole, in order, while it works,
        with whether the call's request body is a body reference (a `bref` frame); they
        end early when it failed (then `report` stays None)."""
        if self.spare is None:
            return
        taken = 0
        identities = _Identities()
        with contextlib.ExitStack() as held:
            records: BinaryIO | None = None
            while self.report is None:
                said = self.spare.progress()
                if said is None:  # it exited: its report says where its records end
                    report = self._finished()
                    if report is None:
                        return
                    said = (report.size, report.calls)
                if records is None and said[0] > 0:
                    records = held.enter_context(self.out.open("rb"))
                for sent in _read_records(records, said[0], self.out):
                    taken += 1
                    yield identities.passed(sent)
                if taken != said[1]:
                    raise _unreadable(self.out)

    def _finished(self) -> Report | None:
        """Its report once it exited having written its block whole (then kept as
        `report`); None when it did not."""
        assert self.spare is not None
        if self.spare.exit_code() != 0:
            return None
        try:
            with _done(self.out).open("rb") as fh:
                report = pickle.load(fh)
        except Exception:  # noqa: BLE001 - any unreadable report: the block is decoded here
            return None
        whole = (
            isinstance(report, Report)
            and isinstance(report.shapes, list)
            and report.calls == self.span[1] - self.span[0]
            and report.size == self.out.stat().st_size
        )  # (a worker of another roller, changed on disk since, reports otherwise)
        self.report = report if whole else None
        return self.report

    def failure(self) -> str:
        """How it failed, for a warning."""
        if self.spare is None:
            return "it had left before its job"
        return f"exit {self.spare.exit_code()}: {self.spare.said_on_stderr()}"


def _sent(passed: Passed, referenced: bool) -> tuple[Any, ...]:
    """A record as a worker writes it: its wire identity as its fields' values, then
    whether its request body is a body reference."""
    facts = passed.facts
    shared = facts[5]
    identity = _identity_values(shared[3])
    return ((*facts[:5], (*shared[:3], identity, *shared[4:])), *passed[1:], referenced)


class _Identities:
    """The records a worker sent, made `Passed` again: one `WireIdentity` a participant,
    made again only when its values change."""

    def __init__(self) -> None:
        self._last: dict[str | None, WireIdentity] = {}

    def passed(self, sent: tuple[Any, ...]) -> tuple[Passed, bool]:
        facts, *rest, referenced = sent
        shared = facts[5]
        values = shared[3]
        identity = self._last.get(values[2])  # by its participant key
        if identity is None or _identity_values(identity) != values:
            identity = self._last[values[2]] = WireIdentity(*values)
        return Passed((*facts[:5], (*shared[:3], identity, *shared[4:])), *rest), referenced


def _read_records(records: BinaryIO | None, stop: int, path: Path) -> Iterator[tuple[Any, ...]]:
    """The records of a worker's records file from where `records` is up to byte `stop`
    (a record's end), read through its buffer: memory stays a record or two however far
    the worker is ahead. Bytes the buffer read beyond `stop` were written already (a
    file read gives only what was written), and are the next records'."""
    while records is not None and records.tell() < stop:
        try:
            sent = pickle.load(records)
        except Exception:  # noqa: BLE001 - its bytes changed on disk since
            raise _unreadable(path) from None
        if not isinstance(sent, tuple) or records.tell() > stop:
            raise _unreadable(path)
        yield sent


def _unreadable(path: Path) -> IntegrityError:
    return IntegrityError(
        f"finalize: a record of {path.name}, as a worker process wrote it, cannot be read "
        "back: finalize the attempt again"
    )


def _done(out: Path) -> Path:
    return out.with_suffix(".done")


def decode_block(job: Job, span: tuple[int, int], out: Path, progress: Progress) -> None:
    """A worker's work: its block's records in `out`, saying how far it got every
    `PROGRESS_EVERY` calls, then, once they are all there, its report in `.done`."""
    first = FirstPass(job.harness, job.capture_scope, job.tool_ids)
    with (
        CaptureBodies(AttemptPaths(job.root)) as earlier,
        TapeIndex.reopen(job.source, resolve=earlier) as tape,
        out.open("wb") as fh,
    ):
        pickler = pickle.Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL)
        for k, n in enumerate(range(*span), start=1):
            ref = tape.exchanges[n]
            pickler.dump(_sent(first.call(n, tape.load(ref)), tape.referenced(ref)))
            pickler.clear_memo()  # each record on its own: read back one at a time
            if k % PROGRESS_EVERY == 0:
                fh.flush()
                progress.say(fh.tell(), k)
        fh.flush()
        report = Report(span[1] - span[0], fh.tell(), tape.shape_problems())
    with _done(out).open("wb") as fh:
        pickle.dump(report, fh, protocol=pickle.HIGHEST_PROTOCOL)

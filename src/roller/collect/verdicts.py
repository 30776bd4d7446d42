"""Judging what a run directory already holds: each attempt, then each sample.

The one place that decides whether a sample is reused, collected again, or refused
(docs/collect.md, "Resume"); the run driver asks it before any model call and after
every attempt it collects.

Rules kept:
- an attempt is judged by the same checks as `roller validate`
  (`roller.capture.integrity.validate_attempt`: hashes, attribution, references,
  statuses). One that does not validate is `invalid`: kept, reported, never reused;
- an attempt without a manifest (roller was killed while collecting it) is first
  finalized from its raw/ exactly as `roller finalize` does (`recovered`), then judged
  like any other; one that cannot be finalized is `invalid`. The native logs its
  harness wrote before the kill are first copied from the scratch HOME the attempt
  recorded (`raw/scratch.json`), when it is still there, and the scratch is removed;

- a valid attempt `succeeded` when its execution completed and its capture is complete;
  it is `interrupted` when its harness was killed (timeout, Ctrl-C, roller's death, or
  the death of the Ray worker or node it ran on: `roller.collect.lost`, whose reason the
  verdict carries), else `failed`;
- a sample is finished (reused as it is) when its latest attempt is valid and terminal:
  it succeeded, or the sample has used its budget of `--attempts` failed attempts.
  Interrupted and invalid attempts never count against the budget: the harness did not
  decide them;
- a sample whose stored main trajectory holds a subagent's call (its participant's
  role is `child`), or cannot be read to check, is refused: continuing it would carry a
  wrong main trajectory over. Roles come from the manifest, never from an id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths, SamplePaths
from roller.capture.models import Manifest
from roller.capture.reader import read_attempt, read_manifest
from roller.capture.summary_record import AttemptOutcome, AttemptSummary
from roller.capture.trajectory_record import TrajectoryRecord
from roller.capture.writer import settle_raw
from roller.collect.lost import lost_reason
from roller.collect.scratch import native_left, scratch_removed
from roller.errors import RollerError
from roller.export.trajectory_file import read_trajectory, write_trajectory
from roller.finalize.attempt import finalize_attempt


@dataclass(frozen=True)
class AttemptVerdict:
    attempt: AttemptPaths
    outcome: AttemptOutcome
    manifest: Manifest | None
    problems: tuple[str, ...] = ()
    recovered: bool = False
    collected_now: bool = False
    lost: str | None = None  # why its runner was lost (`roller.collect.lost`)

    @property
    def counts(self) -> bool:
        """Whether it uses one of the sample's `--attempts` (the harness decided it)."""
        return self.outcome in ("succeeded", "failed")

    def summary(self) -> AttemptSummary:
        m = self.manifest
        return AttemptSummary(
            attempt=self.attempt.attempt_number,
            outcome=self.outcome,
            collected_now=self.collected_now,
            recovered=self.recovered,
            execution_status=m.execution_status if m else None,
            capture_status=m.capture_status if m else None,
            calls=m.counts.calls if m else 0,
            exportable_calls=m.counts.exportable_calls if m else 0,
            wall_s=wall_s(m) if m else None,
            problems=[*self.problems, *([f"lost: {self.lost}"] if self.lost else [])],
        )


def wall_s(manifest: Manifest) -> float | None:
    try:
        start = datetime.fromisoformat(manifest.started_at.rstrip("Z"))
        end = datetime.fromisoformat(manifest.ended_at.rstrip("Z"))
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds())


def _outcome(manifest: Manifest) -> AttemptOutcome:
    if manifest.execution_status == "completed" and manifest.capture_status == "complete":
        return "succeeded"
    return "interrupted" if manifest.execution_status == "interrupted" else "failed"


def judge_attempt(attempt: AttemptPaths, collected_now: bool = False) -> AttemptVerdict:
    """Recover (when it has no manifest), validate and classify one attempt."""
    recovered = False
    settle_raw(attempt)
    if not attempt.manifest.exists():
        try:
            _recover(attempt)
        except RollerError as exc:
            why = f"no manifest, and it cannot be finalized from raw/: {exc}"
            return AttemptVerdict(attempt, "invalid", None, (why,), False, collected_now)
        except Exception as exc:  # noqa: BLE001 (a bug in finalize must not end the run)
            why = (
                f"no manifest: finalizing it from raw/ failed ({type(exc).__name__}: {exc}); "
                "raw/ is kept, `roller finalize` retries"
            )
            return AttemptVerdict(attempt, "invalid", None, (why,), False, collected_now)
        recovered = True
    report = validate_attempt(attempt)
    if not report.ok:
        problems = tuple(str(p) for p in report.problems)
        manifest = None if report.unreadable else _manifest_or_none(attempt)
        return AttemptVerdict(attempt, "invalid", manifest, problems, recovered, collected_now)
    manifest = read_manifest(attempt)
    outcome = _outcome(manifest)
    lost = lost_reason(attempt) if outcome == "interrupted" else None
    return AttemptVerdict(attempt, outcome, manifest, (), recovered, collected_now, lost)


def _recover(attempt: AttemptPaths) -> None:
    """Publish an attempt roller was killed in, from what it left on disk."""
    scratch = native_left(attempt)
    finalize_attempt(attempt)
    write_trajectory(attempt)
    scratch_removed(attempt, scratch)


def _manifest_or_none(attempt: AttemptPaths) -> Manifest | None:
    try:
        return read_manifest(attempt)
    except RollerError:
        return None


def subagent_steps(attempt: AttemptPaths, record: TrajectoryRecord) -> list[str]:
    """The calls of a stored main trajectory that belong to a child participant."""
    capture = read_attempt(attempt)
    roles = {p.participant_id: p.role for p in capture.manifest.participants}
    owner = {c.call_id: c.participant_id for c in capture.calls}
    listed = [
        *record.call_ids,
        *(r.call_id for s in record.segments for r in s.requests),
        *(m.call_id for s in record.segments for m in s.messages),
    ]
    found = [cid for cid in listed if roles.get(owner.get(cid) or "") == "child"]
    if record.root_participant_id is not None and roles.get(record.root_participant_id) == "child":
        found.insert(0, f"root_participant_id {record.root_participant_id}")
    return list(dict.fromkeys(found))


def trajectory_refusal(sample: SamplePaths, verdicts: Sequence[AttemptVerdict]) -> str | None:
    """Why the sample's stored main trajectories forbid continuing it, or None."""
    for verdict in verdicts:
        if verdict.manifest is None or verdict.outcome == "invalid":
            continue  # nothing trustworthy to compare with; the attempt is not reused
        path = sample.trajectory_file(verdict.attempt.attempt_number)
        if not path.exists():
            continue
        try:
            steps = subagent_steps(verdict.attempt, read_trajectory(path))
        except RollerError as exc:
            what = f"cannot be read to check it ({exc})"
        else:
            if not steps:
                continue
            what = f"holds subagent steps ({', '.join(steps[:5])})"
        return (
            f"sample {sample.sample_id}: its main trajectory {path} {what}. Resume will not "
            "reuse or continue it: collect into a new --run-dir, or re-project it offline "
            f"on a copy with `roller reproject {sample.root} --out COPY`"
        )
    return None


@dataclass(frozen=True)
class SampleVerdict:
    sample: SamplePaths
    attempts: tuple[AttemptVerdict, ...]
    refusal: str | None = None

    @property
    def latest(self) -> AttemptVerdict | None:
        return self.attempts[-1] if self.attempts else None

    def used(self) -> int:
        return sum(1 for a in self.attempts if a.counts)

    def finished(self, budget: int) -> bool:
        """Reused as it is: the latest attempt is valid and terminal."""
        latest = self.latest
        if latest is None or latest.outcome in ("invalid", "interrupted"):
            return False
        return latest.outcome == "succeeded" or self.used() >= budget

    def with_attempt(self, verdict: AttemptVerdict) -> SampleVerdict:
        return SampleVerdict(self.sample, (*self.attempts, verdict), self.refusal)


def judge_sample(sample: SamplePaths) -> SampleVerdict:
    """Every attempt of the sample judged (killed ones recovered first), and whether its
    stored main trajectories forbid continuing it. A reused attempt without its stored
    trajectory gets it back (derived data, rebuilt from the validated capture)."""
    verdicts = tuple(judge_attempt(a) for a in sample.attempts())
    refusal = trajectory_refusal(sample, verdicts)
    latest = verdicts[-1] if verdicts else None
    if (
        refusal is None
        and latest is not None
        and latest.outcome != "invalid"
        and not sample.trajectory_file(latest.attempt.attempt_number).exists()
    ):
        write_trajectory(latest.attempt)
    return SampleVerdict(sample, verdicts, refusal)

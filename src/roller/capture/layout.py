"""Paths of the run layout (`docs/protocol.md`, "Run layout"). No I/O beyond path math.

```
RUN_DIR/
  run.json
  tasks.jsonl              the run's tasks (the --tasks file byte for byte, or --prompt lines)
  task-files/TASK_ID/      each task's "files" folder, copied when the run started
  summary.json             per sample: attempts, statuses, calls, wall time (last invocation)
  samples/SAMPLE_ID/
    sample.json
    capture/attempt-NNNN/   manifest.json calls.jsonl relations.jsonl [contexts.blobs] [raw/]
    trajectory/attempt-NNNN.json   the attempt's main trajectory (derived, regenerable)
    lost/attempt-NNNN.json   why an attempt was lost (its worker died; the attempt is interrupted)
    failed/attempt-NNNN.json roller's own error on an attempt (a bug) and its traceback
```
Inside `raw/` (debug material, removed per retention): `tape/` (the proxy's segments),
`native/` (the harness's native logs, copied), `harness/` (stdout, stderr, launch plan),
`attempt.json` (the inputs finalize needs to re-run byte-identically) and
`responses/<call_id>.body` (each raw response body exactly as received).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from roller.errors import UsageError

MANIFEST = "manifest.json"
CALLS = "calls.jsonl"
RELATIONS = "relations.jsonl"
CONTEXTS = "contexts.blobs"  # compact/v3: the content-addressed contexts (`roller.capture.blobs`)
FORMAL_FILES = (CALLS, RELATIONS)
# The formal files of each storage layout, in the order they are written.
LAYOUT_FILES: dict[str, tuple[str, ...]] = {
    "compact/v2": FORMAL_FILES,
    "compact/v3": (CALLS, RELATIONS, CONTEXTS),
}
RAW = "raw"
RAW_DISCARDED = "raw.discarded"

_SAMPLE_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_ATTEMPT_DIR = re.compile(r"^attempt-(\d{4,})$")


def check_sample_id(sample_id: str) -> str:
    """A sample id becomes a directory name: keep it boring and traversal-proof."""
    if not _SAMPLE_ID.match(sample_id) or sample_id in {".", ".."}:
        raise UsageError(
            f"invalid sample id {sample_id!r}: use 1-128 of A-Z a-z 0-9 _ . - (not . or ..)"
        )
    return sample_id


@dataclass(frozen=True)
class AttemptPaths:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def calls(self) -> Path:
        return self.root / CALLS

    @property
    def relations(self) -> Path:
        return self.root / RELATIONS

    @property
    def contexts(self) -> Path:
        return self.root / CONTEXTS

    @property
    def raw(self) -> Path:
        return self.root / RAW

    @property
    def raw_discarded(self) -> Path:
        """Where publication moves raw/ it cleans until the manifest is written
        (`roller.capture.writer.settle_raw`)."""
        return self.root / RAW_DISCARDED

    @property
    def tape(self) -> Path:
        return self.raw / "tape"

    @property
    def native(self) -> Path:
        return self.raw / "native"

    @property
    def harness_output(self) -> Path:
        return self.raw / "harness"

    @property
    def attempt_inputs(self) -> Path:
        return self.raw / "attempt.json"

    @property
    def responses(self) -> Path:
        return self.raw / "responses"

    @property
    def scratch_record(self) -> Path:
        """Where the attempt's scratch dirs are, while it runs (so a resume after a crash
        can still copy the native logs the harness wrote there)."""
        return self.raw / "scratch.json"

    def response_body(self, call_id: str) -> Path:
        return self.responses / f"{call_id}.body"

    @property
    def attempt_number(self) -> int:
        m = _ATTEMPT_DIR.match(self.root.name)
        if m is None:
            raise UsageError(f"{self.root} is not an attempt directory (attempt-NNNN)")
        return int(m.group(1))


@dataclass(frozen=True)
class SamplePaths:
    root: Path

    @property
    def sample_id(self) -> str:
        return self.root.name

    @property
    def sample_json(self) -> Path:
        return self.root / "sample.json"

    @property
    def capture(self) -> Path:
        return self.root / "capture"

    @property
    def trajectory(self) -> Path:
        return self.root / "trajectory"

    def trajectory_file(self, number: int) -> Path:
        """The main trajectory derived from attempt `number` (derived data, regenerable)."""
        return self.trajectory / f"attempt-{number:04d}.json"

    def lost_file(self, number: int) -> Path:
        """Why attempt `number` was lost: its runner died elsewhere (a Ray worker or node)."""
        return self.root / "lost" / f"attempt-{number:04d}.json"

    def failure_file(self, number: int) -> Path:
        """Roller's own error on attempt `number` (a bug, not the harness's): the error
        and its traceback, for a report; the attempt is kept as it was left."""
        return self.root / "failed" / f"attempt-{number:04d}.json"

    def attempt(self, number: int) -> AttemptPaths:
        return AttemptPaths(self.capture / f"attempt-{number:04d}")

    def attempts(self) -> list[AttemptPaths]:
        if not self.capture.is_dir():
            return []
        found = [p for p in self.capture.iterdir() if p.is_dir() and _ATTEMPT_DIR.match(p.name)]
        return [AttemptPaths(p) for p in sorted(found)]

    def next_attempt(self) -> AttemptPaths:
        existing = self.attempts()
        return self.attempt(existing[-1].attempt_number + 1 if existing else 1)


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def samples(self) -> Path:
        return self.root / "samples"

    @property
    def tasks_snapshot(self) -> Path:
        return self.root / "tasks.jsonl"

    def task_files(self, task_id: str) -> Path:
        return self.root / "task-files" / check_sample_id(task_id)

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    def sample(self, sample_id: str) -> SamplePaths:
        return SamplePaths(self.samples / check_sample_id(sample_id))

    def all_samples(self) -> list[SamplePaths]:
        if not self.samples.is_dir():
            return []
        return [SamplePaths(p) for p in sorted(self.samples.iterdir()) if p.is_dir()]


def find_attempts(path: Path) -> list[AttemptPaths]:
    """Every attempt directory under `path`, which may be a run, a sample or an attempt."""
    if (path / MANIFEST).exists() or _ATTEMPT_DIR.match(path.name):
        return [AttemptPaths(path)]
    if (path / "capture").is_dir():
        return SamplePaths(path).attempts()
    if (path / "samples").is_dir():
        return [a for s in RunPaths(path).all_samples() for a in s.attempts()]
    return []

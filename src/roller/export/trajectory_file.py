"""The stored main trajectory of an attempt: `samples/<id>/trajectory/attempt-NNNN.json`.

Derived data. It is written after the attempt's capture was published (by `roller
collect` and `roller finalize`), outside the attempt directory, so it is never one of
the capture's formal files and never in its manifest; `roller export trajectory`
rebuilds the same record from the capture at any time. One compact JSON document and a
newline — the same line `roller export trajectory` writes for that attempt. Its
`source.calls_sha256` names the calls.jsonl it was built from, so a stale file is
recognizable. Written atomically; an attempt directory outside a run layout (not under
`<sample>/capture/`) has no stored trajectory.
"""

from __future__ import annotations

from pathlib import Path

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths, SamplePaths
from roller.capture.reader import read_attempt, read_json_model
from roller.capture.trajectory_record import TrajectoryRecord
from roller.export.trajectory import build_trajectory


def trajectory_path(attempt: AttemptPaths) -> Path | None:
    """Where the attempt's trajectory is stored; None outside a run layout."""
    capture_dir = attempt.root.parent
    if capture_dir.name != "capture":
        return None
    return SamplePaths(capture_dir.parent).trajectory_file(attempt.attempt_number)


def serialize(record: TrajectoryRecord) -> str:
    """The one serialization of a trajectory record (a single JSON line)."""
    return record.model_dump_json(by_alias=True)


def write_trajectory(attempt: AttemptPaths) -> tuple[TrajectoryRecord, Path | None]:
    """Build the attempt's trajectory from its published capture and store it."""
    record = build_trajectory(read_attempt(attempt))
    path = trajectory_path(attempt)
    if path is not None:
        atomic_write(path, (serialize(record) + "\n").encode("utf-8"))
    return record, path


def read_trajectory(path: Path) -> TrajectoryRecord:
    """A stored trajectory, read strictly (CaptureFormatError naming the file)."""
    return read_json_model(path, TrajectoryRecord)

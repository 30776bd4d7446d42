"""Re-projecting a sample offline, on a copy: `roller reproject SAMPLE_DIR --out COPY`.

For a sample `--resume` refuses (its stored main trajectory holds subagent steps,
`roller.collect.verdicts`): the sample directory is copied to COPY, and in the copy only
each attempt whose raw/ was retained is re-finalized from it (`roller finalize`), every
attempt's main trajectory is derived again from its formal files (root participant
only), and every attempt is validated. The original is only read: nothing under it is
opened for writing, so it stays byte-identical.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from roller.capture.integrity import validate_attempt
from roller.capture.layout import SamplePaths
from roller.collect.verdicts import subagent_steps
from roller.errors import RollerError, UsageError
from roller.export.trajectory_file import read_trajectory, write_trajectory
from roller.finalize.attempt import finalize_attempt


@dataclass(frozen=True)
class Reprojected:
    attempt: str  # attempt-NNNN
    source: Literal["raw", "formal_files"]  # re-finalized from raw/, or raw/ was cleaned
    valid: bool
    problems: tuple[str, ...]


def reproject(sample_dir: Path, out: Path) -> list[Reprojected]:
    sample = SamplePaths(sample_dir)
    if not sample.attempts():
        raise UsageError(f"{sample_dir} is not a sample directory (no capture/attempt-NNNN)")
    if out.exists():
        raise UsageError(f"--out {out} exists; reproject writes a new copy, never over one")
    if out.resolve().is_relative_to(sample_dir.resolve()):
        raise UsageError(f"--out {out} is inside {sample_dir}; the original is never written")
    shutil.copytree(sample_dir, out, symlinks=True)
    done = []
    for attempt in SamplePaths(out).attempts():
        problems: list[str] = []
        source: Literal["raw", "formal_files"] = "formal_files"
        try:
            if attempt.attempt_inputs.exists():
                finalize_attempt(attempt)
                source = "raw"
            _, stored = write_trajectory(attempt)
        except RollerError as exc:
            done.append(Reprojected(attempt.root.name, source, False, (str(exc),)))
            continue
        report = validate_attempt(attempt)
        problems += [str(p) for p in report.problems]
        if report.ok and stored is not None:
            steps = subagent_steps(attempt, read_trajectory(stored))
            problems += [f"main trajectory still holds subagent step {s}" for s in steps]
        done.append(Reprojected(attempt.root.name, source, not problems, tuple(problems)))
    return done

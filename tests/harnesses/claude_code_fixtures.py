"""Access to the real Claude Code 2.1.332 fixtures under tests/data/harnesses/claude-code/.

Each fixture is one real `roller collect` run (see regenerate.py there). Tests that
corrupt a log work on a copy (`native_copy`); `attempt_dir` rebuilds an attempt's raw/
(attempt.json, the gunzipped tape, the native logs) so finalize runs on the real pair.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from roller.capture.layout import AttemptPaths

DATA = Path(__file__).resolve().parents[1] / "data" / "harnesses" / "claude-code"


def native(name: str) -> Path:
    return DATA / name / "native"


def native_copy(name: str, dest: Path) -> Path:
    out = dest / "native"
    shutil.copytree(native(name), out)
    return out


def main_transcript(native_dir: Path) -> Path:
    (path,) = native_dir.glob("projects/*/*.jsonl")
    return path


def subagent_files(native_dir: Path) -> dict[str, Path]:
    """agentId -> transcript path."""
    return {
        p.name.removeprefix("agent-").removesuffix(".jsonl"): p
        for p in native_dir.glob("projects/*/*/subagents/agent-*.jsonl")
    }


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, values: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(v) + "\n" for v in values))


def attempt_dir(name: str, dest: Path) -> AttemptPaths:
    """A fresh attempt directory whose raw/ holds the fixture's real tape and logs."""
    paths = AttemptPaths(dest / "attempt-0001")
    paths.tape.mkdir(parents=True)
    shutil.copyfile(DATA / name / "attempt.json", paths.attempt_inputs)
    for seg in sorted((DATA / name / "tape").glob("*.gz")):
        (paths.tape / seg.name.removesuffix(".gz")).write_bytes(gzip.decompress(seg.read_bytes()))
    shutil.copytree(native(name), paths.native)
    return paths

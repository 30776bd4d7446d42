"""Published captures of the checked-in real runs (tests/data/harnesses/<harness>/<name>/).

Each fixture's tape and native logs (gunzipped where stored compressed) are laid out as
an attempt's raw/ under a run layout, and `finalize_attempt` publishes the capture, as
`roller collect` would have; the main trajectory is stored beside it. Claude Code,
OpenCode, Codex, Gemini CLI and Pi cover the four protocols.

The test session publishes them all once (`real_captures`, tests/conftest.py) and every
test that reads them shares that set; the fixture fails the session if a test wrote into
it (`RealCaptures.fingerprint`). A test that changes a capture copies it first.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.export.trajectory_file import write_trajectory
from roller.finalize.attempt import finalize_attempt
from tests.harnesses.fixture_capture import DATA, fixture_dir, unpacked_copy

ALL = sorted((p.parent.parent.name, p.parent.name) for p in DATA.glob("*/*/attempt.json"))


def publish(harness: str, name: str, dest: Path) -> AttemptPaths:
    """The fixture as a published attempt under `dest/<harness>/<name>/` (a run dir)."""
    source = fixture_dir(harness, name)
    paths = AttemptPaths(dest / harness / name / "samples" / name / "capture" / "attempt-0001")
    paths.raw.mkdir(parents=True)
    shutil.copyfile(source / "attempt.json", paths.attempt_inputs)
    unpacked_copy(source / "tape", paths.tape)
    unpacked_copy(source / "native", paths.native)
    finalize_attempt(paths)
    write_trajectory(paths)
    return paths


def run_dir(harness: str, name: str, dest: Path) -> Path:
    return dest / harness / name


def load(harness: str, name: str, dest: Path) -> Capture:
    return read_attempt(publish(harness, name, dest))


@dataclass(frozen=True)
class RealCaptures(Mapping[tuple[str, str], Capture]):
    """Every fixture published under `base`, read back: (harness, name) -> capture."""

    base: Path
    captures: dict[tuple[str, str], Capture]

    def __getitem__(self, key: tuple[str, str]) -> Capture:
        return self.captures[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.captures)

    def __len__(self) -> int:
        return len(self.captures)

    def run(self, harness: str, name: str) -> Path:
        """The fixture's run directory (the path `roller export` and `roller view` take)."""
        return run_dir(harness, name, self.base)

    def fingerprint(self) -> list[tuple[str, int, int]]:
        """(path, size, mtime) of every published file: what a write would change."""
        return [
            (str(p.relative_to(self.base)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(self.base.rglob("*"))
            if p.is_file()
        ]


def publish_all(dest: Path) -> RealCaptures:
    """Every fixture published under `dest` (a few seconds for all of them)."""
    return RealCaptures(dest, {(h, n): load(h, n, dest) for h, n in ALL})


def agents_reversed(capture: Capture, dest: Path) -> Path | None:
    """A copy of `capture` at `dest` whose calls.jsonl holds the agents' calls reversed
    (calls no agent made keep their places): valid, but out of sequence order. None for
    a capture of fewer than three calls."""
    lines = capture.paths.calls.read_bytes().splitlines(keepends=True)
    if len(lines) < 3:
        return None
    shutil.copytree(capture.paths.root, dest)
    agents = [i for i, line in enumerate(lines) if json.loads(line)["participant_id"]]
    for i, j in zip(agents, reversed(agents), strict=True):
        if i >= j:
            break
        lines[i], lines[j] = lines[j], lines[i]
    (dest / "calls.jsonl").write_bytes(b"".join(lines))
    return dest


def first_agent_last(capture: Capture, dest: Path) -> Path | None:
    """A copy of `capture` at `dest` whose calls.jsonl holds the calls of the agent of
    its first line after all the others, each agent's calls in their order, and whose
    manifest names the file as it now is: valid, but out of sequence order. None when
    that agent made every call."""
    lines = capture.paths.calls.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])["participant_id"] if lines else None
    moved = sorted(lines, key=lambda line: json.loads(line)["participant_id"] == first)
    if moved == lines:
        return None
    shutil.copytree(capture.paths.root, dest)
    data = b"".join(moved)
    (dest / "calls.jsonl").write_bytes(data)
    manifest = json.loads((dest / "manifest.json").read_bytes())
    manifest["files"]["calls.jsonl"]["sha256"] = hashlib.sha256(data).hexdigest()
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return dest

"""benchmarks/finalize_ab.py runs: this tree against itself on a small capture (the same
bytes published by both, every round reported), and a `--before` that is not a roller
checkout is refused before anything is built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "finalize_ab.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )


def test_a_tree_against_itself_publishes_the_same_bytes(tmp_path: Path) -> None:
    done = _run("--before", str(ROOT), "--calls", "60", "--rounds", "2", "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "60 calls built; 2 rounds, the trees taking turns"
    assert [line.split(":")[0].strip() for line in lines[1:3]] == ["round 1", "round 2"]
    assert lines[-1].endswith("of 2 pairs; the same bytes published by both")


def test_a_before_tree_without_roller_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    done = _run("--before", str(tmp_path), "--calls", "60", "--rounds", "1")
    assert done.returncode == 1
    assert "roller imports from" in done.stderr and "not the before tree" in done.stderr

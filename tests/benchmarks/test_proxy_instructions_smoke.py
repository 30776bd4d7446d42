"""benchmarks/proxy_instructions.py runs: `--help` names every subject (the subjects run
under valgrind for minutes, so no measurement is made here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "proxy_instructions.py"


def test_help_names_every_subject_and_the_concurrency() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True
    )
    text = "".join(done.stdout.split())  # argparse wraps lines, even at hyphens
    for subject in ("bare", "proxy", "gateway-sqlite", "gateway-pg", "--concurrency"):
        assert subject in text

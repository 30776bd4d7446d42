"""benchmarks/finalize_instructions.py runs: `--help` names its options (the operations
run under valgrind for minutes, so no measurement is made here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "finalize_instructions.py"


def test_help_names_the_trees_the_size_and_the_operations() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True
    )
    text = "".join(done.stdout.split())  # argparse wraps lines, even at hyphens
    for option in ("--trees", "--calls", "--operations", "--keep"):
        assert option in text

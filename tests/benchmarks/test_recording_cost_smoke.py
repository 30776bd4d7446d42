"""benchmarks/recording_cost.py runs: one small round of its four proxies in front of a real
`roller mock-model`, every request answered (its variants patch the tape writer in their
own processes, so a change of the writer's signatures breaks them; nothing timed is
asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "recording_cost.py"


def test_a_small_round_answers_every_request_through_every_variant() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--requests", "40", "--rounds", "1",
         "--concurrency", "1", "--body-kb", "1"],
        check=False, capture_output=True, text=True, timeout=240, cwd=SCRIPT.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PROBLEM" not in done.stdout, done.stdout
    variants = {line.split()[0] for line in done.stdout.splitlines() if "vs bare)" in line}
    assert variants == {"bare", "roller-no-tape", "roller-no-write", "roller"}

"""benchmarks/compare_peers.py runs: `--help`, and one quick round of direct and the bare
hop in front of a real `roller mock-model` (a smoke run, nothing timed is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_peers.py"


def test_help_names_every_peer() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True
    )
    text = "".join(done.stdout.split())  # argparse wraps lines, even at hyphens
    for peer in ("bare", "proxy", "gateway-sqlite", "gateway-pg", "litellm", "mitmproxy"):
        assert peer in text


def test_a_quick_round_of_direct_and_bare(tmp_path: Path) -> None:
    out = tmp_path / "table.txt"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--peers", "direct,bare",
         "--modes", "json-small", "--concurrency", "1", "--out", str(out)],
        capture_output=True, text=True, check=True, timeout=240,
    )  # fmt: skip
    rows = [line.split() for line in out.read_text().splitlines()]
    peers = {r[2] for r in rows if r and r[0] == "json-small"}
    assert peers == {"direct", "bare"}
    bare = next(r for r in rows if r[:3] == ["json-small", "1", "bare"])
    assert float(bare[5]) > 0  # requests per second: every request was answered

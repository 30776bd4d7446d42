"""A formal file written by a forked child: the same bytes and entry as written here, and
nothing left behind when the child fails, is cancelled or may not fork.

Each case runs in a fresh process (`tests.capture.beside_probe`): `WrittenBeside` forks
only where no other thread runs, which a pytest process does not promise. The finalize
that uses it (relations.jsonl beside calls.jsonl) is checked in
tests/finalize/test_workers.py, byte for byte against one process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from roller.capture.beside import alone

ROOT = Path(__file__).resolve().parents[2]


def probe(case: str, directory: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.capture.beside_probe", case, str(directory)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    seen["stderr"] = done.stderr
    return seen


def test_a_child_writes_the_bytes_and_entry_this_process_writes(tmp_path: Path) -> None:
    seen = probe("writes", tmp_path)
    assert seen["there"] == seen["here"]
    assert seen["here"]["bytes"] > 3 << 20
    assert seen["left"] == ["beside.jsonl", "here.jsonl"]  # moved in place; no sibling
    assert (tmp_path / "beside.jsonl").read_bytes() == (tmp_path / "here.jsonl").read_bytes()


def test_a_child_that_fails_gives_no_entry_and_leaves_nothing(tmp_path: Path) -> None:
    seen = probe("fails", tmp_path)
    assert seen["entry"] is None
    assert seen["left"] == []
    assert "beside.jsonl: the process writing it failed (exit 1): writing it here" in seen["stderr"]


def test_a_cancelled_child_is_ended_and_its_file_removed(tmp_path: Path) -> None:
    seen = probe("cancelled", tmp_path)
    assert [n for n in seen["while"] if n.startswith(".beside.jsonl.beside-")]  # it wrote
    assert seen["left"] == []
    assert not seen["still_there"]  # killed and reaped


def test_no_child_is_forked_while_another_thread_runs(tmp_path: Path) -> None:
    seen = probe("threaded", tmp_path)
    assert seen == {"started": False, "left": [], "stderr": seen["stderr"]}


def test_alone_counts_every_thread() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not alone()
    finally:
        release.set()
        other.join()

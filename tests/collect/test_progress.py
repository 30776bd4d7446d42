"""The progress display of a run of many samples: on a terminal (a pseudo-terminal here)
a live region whose counts line is redrawn as the run advances; on a pipe plain lines,
one per sample's news, and no cursor movement."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.collect.runs_support import AGENT, write_tasks
from tests.support.captures import REPO, roller

CURSOR_UP_AND_CLEAR = "\x1b[1A\x1b[2K"


def _args(tmp_path: Path) -> list[str]:
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["p1", "p2", "p3"])
    return [
        "collect", "--harness", "generic", "--single-agent", "--api-base", "mock:plain",
        "--tasks", str(tasks), "--run-dir", str(tmp_path / "run"), "--concurrency", "2",
        "--", sys.executable, str(AGENT), "plain",
    ]  # fmt: skip


def test_on_a_terminal_the_progress_line_is_redrawn_as_the_run_advances(tmp_path: Path) -> None:
    leader, follower = os.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160", PYTHONPATH=str(REPO / "src"))
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "roller", *_args(tmp_path)],
        stdin=follower, stdout=follower, stderr=follower, env=env, cwd=REPO,
    )  # fmt: skip
    os.close(follower)
    out = b""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process is gone
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=30) == 0, out.decode(errors="replace")[-2000:]
    text = out.decode(errors="replace")
    assert CURSOR_UP_AND_CLEAR in text  # the live region was redrawn in place
    done = [int(n) for n in re.findall(r"(\d)/3 done", text)]
    assert done[0] == 0 and done[-1] == 3 and done == sorted(done)
    assert len(set(re.findall(r"(\d+:\d\d) elapsed", text))) >= 2  # the clock moved
    assert re.search(r"p\d: running", text)  # what a running sample is doing
    assert "p1: attempt-0001 succeeded" in text
    assert "3 succeeded · 0 failed" in text  # the summary table's caption


def test_on_a_pipe_it_prints_plain_lines(tmp_path: Path) -> None:
    done = roller(*_args(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stderr
    lines = done.stderr.splitlines()
    news = [line for line in lines if line.startswith("[")]
    assert len(news) == 4  # the start, then one per sample
    assert all(re.match(r"\[\d/3 done · \d failed · \d running · \d waiting · ", n) for n in news)
    for sid in ("p1", "p2", "p3"):
        assert sum(f"] {sid}: attempt-0001 succeeded" in n for n in news) == 1
    assert news[-1].startswith("[3/3 done")
    assert "p1" in done.stdout and "succeeded" in done.stdout  # the table, on stdout

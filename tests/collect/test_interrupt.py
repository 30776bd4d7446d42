"""Ctrl-C during `roller collect` stops the harness and still publishes the capture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.captures import REPO, only_attempt

from roller.capture.integrity import validate_attempt

AGENT = REPO / "tests" / "golden" / "slow" / "agent.py"


def test_sigint_stops_the_harness_and_publishes_an_interrupted_capture(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "roller",
            "collect",
            "--harness",
            "generic",
            "--api-base",
            "mock:plain",
            "--run-dir",
            str(run_dir),
            "--",
            sys.executable,
            str(AGENT),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout_file = None
    deadline = time.monotonic() + 120
    # The harness's stdout goes to raw/harness/stdout.txt: wait until it made its call.
    while time.monotonic() < deadline:
        found = list(run_dir.glob("samples/*/capture/attempt-*/raw/harness/stdout.txt"))
        if found and "called" in found[0].read_text():
            stdout_file = found[0]
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert stdout_file is not None, "the agent never made its call"
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopped on request" in err and "Traceback" not in err
    capture = only_attempt(run_dir)
    assert capture.manifest.execution_status == "interrupted"
    assert [c.execution_status for c in capture.calls] == ["completed"]
    assert capture.calls[0].export_status == "exportable"
    assert validate_attempt(capture.paths).ok


def test_sigint_during_a_run_of_tasks_stops_it_and_starts_no_more(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(f'{{"id": "t{n}", "prompt": "wait"}}\n' for n in range(3)))
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "roller", "collect", "--harness", "generic",
            "--api-base", "mock:plain", "--tasks", str(tasks), "--run-dir", str(run_dir),
            "--", sys.executable, str(AGENT),
        ],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = list(run_dir.glob("samples/t0/capture/attempt-*/raw/harness/stdout.txt"))
        if found and "called" in found[0].read_text():
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped"] is True
    assert [(s["sample_id"], s["status"]) for s in summary["samples"]] == [
        ("t0", "failed"), ("t1", "not_run"), ("t2", "not_run"),
    ]  # fmt: skip
    assert summary["samples"][0]["attempts"][0]["outcome"] == "interrupted"
    assert not (run_dir / "samples" / "t1" / "capture").exists()

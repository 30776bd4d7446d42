"""The supervised launch: exit codes, timeouts, start errors, and no process outliving
roller — not the harness, not its children, not one that left the harness's process
group — when roller is killed with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.captures import REPO

from roller.collect.launcher import run_plan
from roller.harnesses.base import LaunchPlan

# A "harness" that starts a child in its own group, another in its own session, writes
# every pid down, and then waits forever.
FAMILY = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    same = subprocess.Popen(sleeper)
    group = subprocess.Popen(sleeper, process_group=0)
    session = subprocess.Popen(sleeper, start_new_session=True)
    pids = [os.getpid(), same.pid, group.pid, session.pid]
    with open(sys.argv[1], "w") as fh:
        json.dump(pids, fh)
    time.sleep(600)
    """
)


def _plan(argv: list[str], tmp_path: Path, timeout_s: float = 60) -> LaunchPlan:
    return LaunchPlan(argv=tuple(argv), env=dict(os.environ), cwd=tmp_path, timeout_s=timeout_s)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except (FileNotFoundError, ProcessLookupError):  # gone (reaped between open and read)
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"  # a zombie is dead


def _wait_gone(pids: list[int], within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_exit_code_and_output_files(tmp_path: Path) -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = asyncio.run(run_plan(_plan([sys.executable, "-c", script], tmp_path), tmp_path))
    assert (result.exit_code, result.timed_out, result.launch_error) == (3, False, None)
    assert (tmp_path / "stdout.txt").read_text() == "out\n"
    assert (tmp_path / "stderr.txt").read_text() == "err\n"
    record = json.loads((tmp_path / "process.json").read_text())
    assert record["pid"] == record["pgid"] != record["supervisor_pid"]


def test_stdin_reaches_the_harness(tmp_path: Path) -> None:
    script = "import sys; sys.exit(0 if sys.stdin.read() == 'the prompt' else 9)"
    plan = LaunchPlan(
        argv=(sys.executable, "-c", script),
        env=dict(os.environ),
        cwd=tmp_path,
        timeout_s=60,
        stdin=b"the prompt",
    )
    assert asyncio.run(run_plan(plan, tmp_path)).exit_code == 0


def test_a_missing_binary_is_a_launch_error(tmp_path: Path) -> None:
    result = asyncio.run(run_plan(_plan(["/nonexistent/harness"], tmp_path), tmp_path))
    assert result.exit_code is None
    assert result.launch_error is not None
    assert result.launch_error.startswith("cannot start /nonexistent/harness: ")


def test_a_timeout_ends_the_whole_family(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids.json"
    plan = _plan([sys.executable, "-c", FAMILY, str(pids_file)], tmp_path, timeout_s=3)
    result = asyncio.run(run_plan(plan, tmp_path))
    assert result.timed_out and result.exit_code is None
    assert _wait_gone(json.loads(pids_file.read_text()), within=2) == []


def test_kill_9_of_roller_leaves_no_process_of_the_harness(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids.json"
    runner = textwrap.dedent(
        f"""
        import asyncio, os, sys
        from pathlib import Path
        from roller.collect.launcher import run_plan
        from roller.harnesses.base import LaunchPlan
        plan = LaunchPlan(argv=(sys.executable, "-c", {FAMILY!r}, {str(pids_file)!r}),
                          env=dict(os.environ), cwd=Path({str(tmp_path)!r}), timeout_s=600)
        asyncio.run(run_plan(plan, Path({str(tmp_path)!r})))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    roller = subprocess.Popen([sys.executable, "-c", runner], env=env)
    deadline = time.monotonic() + 60
    record = tmp_path / "process.json"
    # The harness writes its pids as soon as it runs; roller writes process.json when the
    # supervisor reports the start, which under load can come later: wait for both.
    while not pids_file.exists() or not pids_file.read_text() or not record.exists():
        assert time.monotonic() < deadline, "the harness never started"
        assert roller.poll() is None
        time.sleep(0.1)
    time.sleep(0.2)  # the json was written whole (one write), but let it close
    pids = json.loads(pids_file.read_text())
    supervisor = json.loads(record.read_text())["supervisor_pid"]
    assert all(_alive(p) for p in [*pids, supervisor])
    roller.send_signal(signal.SIGKILL)
    roller.wait()
    assert _wait_gone([*pids, supervisor]) == []

"""Running a `LaunchPlan`: config files, a process group, output to files, a timeout.

The plan is data (built by the adapter); this module only executes it. The harness runs
in its own session (process group) so a timeout kills it and every child it started;
stdout/stderr go to files under raw/harness/; `launch.json` records the plan.

What of the environment reaches disk is decided in one place, `recorded_environment`:
the values of what roller itself set (a variable it added or changed: base URLs, scratch
HOME, its own flags; a secret it passed, such as an API key, as `<secret>`) and only the
names of what the harness inherited unchanged from the user's environment — any of
those may be a secret (`MY_SERVICE_TOKEN`, `AWS_SECRET_ACCESS_KEY`), and no list of
known key names can tell which.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from roller.capture.files import atomic_write
from roller.harnesses.base import LaunchPlan

_KILL_GRACE_S = 3.0


@dataclass(frozen=True)
class LaunchResult:
    exit_code: int | None
    timed_out: bool
    launch_error: str | None
    started_ns: int
    ended_ns: int
    stopped: bool = False  # ended early on request (the user's Ctrl-C)


def recorded_environment(
    plan: LaunchPlan, inherited: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """What `launch.json` keeps of `plan.env`: roller's own variables with their values
    (secrets masked), and the sorted names of those inherited unchanged."""
    env: dict[str, str] = {}
    names: list[str] = []
    for name, value in sorted(plan.env.items()):
        if name in plan.secret_env:
            env[name] = "<secret>"
        elif inherited.get(name) == value:
            names.append(name)
        else:
            env[name] = value
    return env, names


def write_plan_record(
    plan: LaunchPlan, path: Path, inherited: Mapping[str, str] | None = None
) -> None:
    """`launch.json` for `plan`; `inherited` is the environment roller started with."""
    env, names = recorded_environment(plan, os.environ if inherited is None else inherited)
    record = {
        "argv": list(plan.argv),
        "cwd": str(plan.cwd),
        "timeout_s": plan.timeout_s,
        "env": env,
        "inherited_env": names,
        "files": [str(f.path) for f in plan.files],
    }
    atomic_write(path, (json.dumps(record, indent=2) + "\n").encode())


def _kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the harness's process group, then SIGKILL it after a grace period."""
    _kill_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), timeout=_KILL_GRACE_S)
    except TimeoutError:
        _kill_group(proc, signal.SIGKILL)
        await proc.wait()


async def run_plan(
    plan: LaunchPlan, output_dir: Path, stop: asyncio.Event | None = None
) -> LaunchResult:
    """Run the plan to its end, its timeout, or until `stop` is set (the user's Ctrl-C):
    a stopped or timed-out harness is ended with its whole process group and reported
    with no exit code, so the capture says `interrupted` instead of losing the run."""
    output_dir.mkdir(parents=True, exist_ok=True)
    for f in plan.files:
        f.path.parent.mkdir(parents=True, exist_ok=True)
        f.path.write_text(f.content)
    write_plan_record(plan, output_dir / "launch.json")
    started = time.time_ns()
    with open(output_dir / "stdout.txt", "wb") as out, open(output_dir / "stderr.txt", "wb") as err:
        try:
            proc = await asyncio.create_subprocess_exec(
                *plan.argv,
                cwd=plan.cwd,
                env=dict(plan.env),
                stdin=asyncio.subprocess.PIPE
                if plan.stdin is not None
                else asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return LaunchResult(
                None,
                False,
                f"cannot start {plan.argv[0]}: {exc.strerror or exc}",
                started,
                time.time_ns(),
            )
        if plan.stdin is not None and proc.stdin is not None:
            proc.stdin.write(plan.stdin)
            await proc.stdin.drain()
            proc.stdin.close()
        timed_out = stopped = False
        waiters = {asyncio.ensure_future(proc.wait())}
        if stop is not None:
            waiters.add(asyncio.ensure_future(stop.wait()))
        try:
            done, pending = await asyncio.wait(
                waiters, timeout=plan.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if proc.returncode is None:
                timed_out = not done
                stopped = bool(done)
                await _stop_group(proc)
        except asyncio.CancelledError:
            _kill_group(proc, signal.SIGKILL)
            await proc.wait()
            raise
        # Whatever the harness left running in its group (background helpers) goes too.
        _kill_group(proc, signal.SIGKILL)
    code = proc.returncode
    return LaunchResult(
        exit_code=None if timed_out or stopped or (code is not None and code < 0) else code,
        timed_out=timed_out,
        launch_error=None,
        started_ns=started,
        ended_ns=time.time_ns(),
        stopped=stopped,
    )

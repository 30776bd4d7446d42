"""Running a `LaunchPlan`: config files, a supervised process group, output to files, a
timeout, and no harness process outliving roller.

The plan is data (built by the adapter); this module only executes it. The harness is
started by the supervisor (`roller.collect.supervisor`, a stdlib-only script) in its own
session, so ending it ends every process it started, and the supervisor ends all of them
when roller dies, even by `kill -9` (it reads EOF on a socket only roller holds).
stdout/stderr go to files under raw/harness/; `launch.json` records the plan;
`process.json` the harness's pid and process group (debug material: where to look for it
in the process table).

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
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


SUPERVISOR = Path(__file__).with_name("supervisor.py")


def _message(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class _Ended:
    returncode: int | None  # None: the supervisor said nothing (it was killed itself)
    error: str | None = None


async def _start_supervisor(
    plan: LaunchPlan, out: int, err: int
) -> tuple[asyncio.subprocess.Process, socket.socket] | str:
    """The supervisor started with the plan, and our end of its control socket; why it
    could not start otherwise."""
    ours, theirs = socket.socketpair()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(SUPERVISOR), str(theirs.fileno()),
            str(_KILL_GRACE_S), "--", *plan.argv,
            cwd=plan.cwd,
            env=dict(plan.env),
            stdin=asyncio.subprocess.PIPE if plan.stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        ours.close()
        return f"cannot start the supervisor: {exc.strerror or exc}"
    finally:
        theirs.close()
    return proc, ours


async def _supervised(
    plan: LaunchPlan, output_dir: Path, out: int, err: int, stop: asyncio.Event | None
) -> tuple[_Ended, bool, bool]:
    """Start the plan under the supervisor and wait for its end, its timeout or `stop`.
    Returns how it ended, and whether it timed out / was stopped."""
    started_supervisor = await _start_supervisor(plan, out, err)
    if isinstance(started_supervisor, str):
        return _Ended(None, started_supervisor), False, False
    proc, ours = started_supervisor
    reader, writer = await asyncio.open_unix_connection(sock=ours)
    waiters: set[asyncio.Future[Any]] = set()
    try:
        started = _message(await reader.readline())
        if started.get("event") != "started":
            await proc.wait()
            message = str(started.get("message") or f"cannot start {plan.argv[0]}")
            return _Ended(None, message), False, False
        pid = started.get("pid")
        record = {"supervisor_pid": proc.pid, "pid": pid, "pgid": pid}
        atomic_write(output_dir / "process.json", (json.dumps(record) + "\n").encode())
        if plan.stdin is not None and proc.stdin is not None:
            proc.stdin.write(plan.stdin)
            with contextlib.suppress(ConnectionError):
                await proc.stdin.drain()
            proc.stdin.close()
        ended = asyncio.ensure_future(reader.readline())
        waiters.add(ended)
        if stop is not None:
            waiters.add(asyncio.ensure_future(stop.wait()))
        done, pending = await asyncio.wait(
            waiters, timeout=plan.timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        timed_out, stopped = not done, bool(done) and ended not in done
        if timed_out or stopped:
            writer.write(b"stop\n")  # SIGTERM to the group, SIGKILL after the grace
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        for task in pending - {ended}:
            task.cancel()
        exited = _message(await ended)
        await proc.wait()
        code = exited.get("returncode")
        return _Ended(code if isinstance(code, int) else None), timed_out, stopped
    finally:
        for task in waiters:
            task.cancel()
        # Closing our end is also how a cancelled collect ends the harness: EOF means
        # "kill everything now" to the supervisor.
        writer.close()
        if proc.returncode is None:
            await asyncio.shield(proc.wait())


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
        ended, timed_out, stopped = await _supervised(
            plan, output_dir, out.fileno(), err.fileno(), stop
        )
    if ended.error is not None:
        return LaunchResult(None, False, ended.error, started, time.time_ns())
    code = ended.returncode
    return LaunchResult(
        exit_code=None if timed_out or stopped or code is None or code < 0 else code,
        timed_out=timed_out,
        launch_error=None,
        started_ns=started,
        ended_ns=time.time_ns(),
        stopped=stopped,
    )

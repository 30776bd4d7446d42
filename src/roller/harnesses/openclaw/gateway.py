"""The OpenClaw launcher: one loopback Gateway around one `openclaw agent` command.

OpenClaw runs sub-agents only through a Gateway (`openclaw agent exec` refuses them), and
`openclaw agent` returns when the parent's turn ends, before its children and their
announce turns have run. So the adapter's launch plan runs this module
(`python -m roller.harnesses.openclaw.gateway [options] -- OPENCLAW agent …`), which owns
the Gateway's whole life:
1. picks a free loopback port and a fresh random token, given to both processes only in
   their environment (`OPENCLAW_GATEWAY_PORT`, `OPENCLAW_GATEWAY_TOKEN`): no file, no
   argv, no `launch.json` ever holds the token;
2. starts `OPENCLAW gateway run --bind loopback --auth token` (its output to
   `--gateway-log`) and waits until it logs that it listens and the port accepts a
   connection (`--ready-timeout`; one that exits first — its port taken meanwhile — is
   started again on another port, three starts in all);
3. runs the agent command as given (stdout/stderr are roller's harness files);
4. waits until the children finished and their notifications drained, by the rule in
   `roller.harnesses.openclaw.lifecycle`, read from the live stores, and the stores
   then stayed unchanged for a second (`QUIET_S`; `--drain-timeout` in all);
5. stops the Gateway: SIGTERM, then SIGKILL after `--stop-grace` (30 s; a stopping
   Gateway first finishes the work it has in hand, within a budget of five minutes of
   its own; the stores are read after this, so a turn that was still running gets to
   end instead of being cut).
It exits with the agent's exit code (70 when the Gateway never became ready) and writes
`--report` (JSON, `roller.openclaw-launch/v1`): timings, the agent's exit code, the drain
outcome (`drained`, `timeout`, `error`) with what was still pending, how the Gateway
stopped. Everything runs in roller's process group, so a collect timeout ends it all.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from roller.harnesses.openclaw.lifecycle import drain_state
from roller.harnesses.openclaw.store import Progress, read_progress

REPORT_SCHEMA = "roller.openclaw-launch/v1"
GATEWAY_NOT_READY = 70
# What 2026.9.6 logs once its HTTP/WS server is bound (`[gateway] http server listening …`).
READY_LINE = b"http server listening"
# A Gateway that exits before it is ready (its port taken meanwhile) is started again on
# another free port, this many times in all.
_STARTS = 3
_POLL_S = 0.25
# How long a drained reading must stay unchanged before it counts (`wait_drained`).
QUIET_S = 1.0


@dataclass
class Report:
    schema: str = REPORT_SCHEMA
    gateway_ready_s: float | None = None
    gateway_exit: int | None = None
    agent_exit: int | None = None
    agent_s: float | None = None
    drain: str = "not_run"
    drain_s: float | None = None
    pending_children: list[str] = field(default_factory=list)
    drain_failures: list[str] = field(default_factory=list)
    drain_error: str | None = None
    stop: str = "not_run"
    stop_s: float | None = None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(
    port: int, gateway: subprocess.Popen[bytes], log: Path, timeout_s: float, offset: int = 0
) -> bool:
    """Our Gateway is listening: its own log says so AND the port accepts. The port alone
    is not proof: a concurrent sample's Gateway may hold it for a moment (a free port is
    only free when it was picked)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and gateway.poll() is None:
        if READY_LINE in log.read_bytes()[offset:]:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                    return True
            except OSError:
                pass
        time.sleep(_POLL_S)
    return False


def wait_drained(
    state_dir: Path, timeout_s: float, report: Report, quiet_s: float = QUIET_S
) -> None:
    """Until the stores read drained and stayed the same for `quiet_s` (or `timeout_s`).

    One drained reading is not enough (2026.9.6): a delivery is marked delivered once
    the requester's announce turn is accepted, not once it ran, and the turn's `running`
    window status is written without being awaited, so for a moment a turn still to
    run reads as drained. Any write it makes (its window, its input, its transcript
    events) changes the reading, and restarts the quiet period."""
    started = time.monotonic()
    quiet: tuple[Progress, float] | None = None  # the drained reading, and since when
    while True:
        now = time.monotonic()
        try:
            progress = read_progress(state_dir)
        except (sqlite3.Error, OSError) as exc:  # a store mid-creation: recorded, retried
            report.drain_error = f"{type(exc).__name__}: {exc}"
            quiet = None
        else:
            state = drain_state(
                progress.subagent_runs,
                progress.task_runs,
                progress.window_status,
                progress.pending_inputs,
            )
            report.pending_children = list(state.pending_children)
            report.drain_failures = list(state.failures)
            if not state.drained:
                quiet = None
            elif quiet is None or quiet[0] != progress:
                quiet = (progress, now)
            elif now - quiet[1] >= quiet_s:
                report.drain = "drained"
                break
        if time.monotonic() - started >= timeout_s:
            report.drain = "error" if report.drain_error else "timeout"
            break
        time.sleep(_POLL_S)
    report.drain_s = round(time.monotonic() - started, 3)


def stop(gateway: subprocess.Popen[bytes], grace_s: float, report: Report) -> None:
    started = time.monotonic()
    if gateway.poll() is None:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=grace_s)
            report.stop = "terminated"
        except subprocess.TimeoutExpired:
            gateway.kill()
            gateway.wait()
            report.stop = "killed"
    else:
        report.stop = "exited_early"
    report.gateway_exit = gateway.returncode
    report.stop_s = round(time.monotonic() - started, 3)


def run(args: argparse.Namespace, agent: Sequence[str], report: Report) -> int:
    env = {**os.environ, "OPENCLAW_GATEWAY_TOKEN": secrets.token_hex(24)}
    gateway = start_gateway(args, agent[0], env, report)
    if gateway is None:
        print("roller: the OpenClaw Gateway did not become ready", file=sys.stderr)
        return GATEWAY_NOT_READY
    try:
        agent_started = time.monotonic()
        code = subprocess.run(list(agent), env=env, check=False).returncode
        report.agent_exit = code
        report.agent_s = round(time.monotonic() - agent_started, 3)
        wait_drained(args.state_dir, args.drain_timeout, report)
        return code
    finally:
        stop(gateway, args.stop_grace, report)


def start_gateway(
    args: argparse.Namespace, openclaw: str, env: dict[str, str], report: Report
) -> subprocess.Popen[bytes] | None:
    """A ready Gateway (`env` gets its port), or None (the last one stopped, reported)."""
    argv = [openclaw, "gateway", "run", "--bind", "loopback", "--auth", "token"]
    args.gateway_log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + args.ready_timeout
    gateway: subprocess.Popen[bytes] | None = None
    with open(args.gateway_log, "wb") as log:
        for _ in range(_STARTS):
            env["OPENCLAW_GATEWAY_PORT"] = str(free_port())
            offset = log.tell()  # only this start's own lines prove this start ready
            gateway = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
            port, left = int(env["OPENCLAW_GATEWAY_PORT"]), deadline - time.monotonic()
            if wait_ready(port, gateway, args.gateway_log, left, offset):
                report.gateway_ready_s = round(time.monotonic() - started, 3)
                return gateway
            if gateway.poll() is None:  # still starting at the deadline: give up
                break
    if gateway is not None:
        stop(gateway, args.stop_grace, report)
    return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m roller.harnesses.openclaw.gateway")
    p.add_argument("--state-dir", type=Path, required=True, help="OpenClaw's ~/.openclaw")
    p.add_argument("--report", type=Path, required=True)
    p.add_argument("--gateway-log", type=Path, required=True)
    p.add_argument("--ready-timeout", type=float, default=240.0)
    p.add_argument("--drain-timeout", type=float, default=180.0)
    p.add_argument("--stop-grace", type=float, default=30.0)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: … [options] -- OPENCLAW agent ARGS…", file=sys.stderr)
        return 2
    cut = argv.index("--")
    args = _parser().parse_args(argv[:cut])
    report = Report()
    # roller's timeout ends the group with SIGTERM: stop the Gateway and still report.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        code = run(args, argv[cut + 1 :], report)
    finally:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(asdict(report), indent=2) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

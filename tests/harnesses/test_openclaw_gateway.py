"""The OpenClaw launcher (`python -m roller.harnesses.openclaw.gateway`) as a real process
around a fake `openclaw` that plays the Gateway (a loopback listener on the port it is
given) and the agent (records what it was given), with real SQLite stores for the wait."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from roller.harnesses.openclaw.gateway import Report, wait_drained
from tests.harnesses.openclaw_stores import Session, done_run, write_stores

FAKE = """
import json, os, signal, socket, sys, time
from pathlib import Path
log = Path(os.environ["FAKE_LOG"])
def record(**what):
    with log.open("a") as f:
        f.write(json.dumps(what) + "\\n")
if sys.argv[1] == "gateway":
    record(role="gateway", argv=sys.argv[1:], port=os.environ.get("OPENCLAW_GATEWAY_PORT"))
    if os.environ.get("FAKE_NEVER_READY"):
        time.sleep(30)
        sys.exit(0)
    first = Path(os.environ["FAKE_LOG"] + ".first")
    if os.environ.get("FAKE_FAIL_FIRST") and not first.exists():
        first.write_text("")
        print("listen EADDRINUSE", flush=True)
        sys.exit(1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(os.environ["OPENCLAW_GATEWAY_PORT"])))
    s.listen()
    if not os.environ.get("FAKE_SILENT"):
        print("[gateway] http server listening (0 plugins, 0.1s)", flush=True)
    stuck = os.environ.get("FAKE_IGNORE_TERM")
    signal.signal(signal.SIGTERM, signal.SIG_IGN if stuck else lambda *_: sys.exit(0))
    while True:
        time.sleep(0.1)
record(role="agent", argv=sys.argv[1:], port=os.environ.get("OPENCLAW_GATEWAY_PORT"),
       token=os.environ.get("OPENCLAW_GATEWAY_TOKEN"))
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "0")))
"""


def _fake(tmp_path: Path) -> Path:
    fake = tmp_path / "openclaw"
    fake.write_text(f"#!{sys.executable}\n{FAKE}")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


def _launch(
    tmp_path: Path, *opts: str, **env: str
) -> tuple[int, dict[str, object], list[dict[str, object]]]:
    fake, state, report = _fake(tmp_path), tmp_path / "home" / ".openclaw", tmp_path / "report.json"
    state.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable, "-m", "roller.harnesses.openclaw.gateway", "--state-dir", str(state),
        "--report", str(report), "--gateway-log", str(tmp_path / "gateway.log"), *opts,
        "--", str(fake), "agent", "--agent", "main",
    ]  # fmt: skip
    log = tmp_path / "fake.log"
    done = subprocess.run(
        argv, env={**os.environ, "FAKE_LOG": str(log), **env}, timeout=120, check=False
    )
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done.returncode, json.loads(report.read_text()), records


def test_the_gateway_runs_around_the_agent_and_the_token_stays_in_the_environment(
    tmp_path: Path,
) -> None:
    code, report, records = _launch(tmp_path, FAKE_AGENT_EXIT="3")
    gateway, agent = records
    assert code == 3 and report["agent_exit"] == 3
    assert gateway["argv"] == ["gateway", "run", "--bind", "loopback", "--auth", "token"]
    assert gateway["port"] == agent["port"] and agent["argv"] == ["agent", "--agent", "main"]
    token = agent["token"]
    assert isinstance(token, str) and len(token) >= 32
    assert token not in json.dumps(gateway["argv"]) + json.dumps(report)
    assert report["drain"] == "drained" and report["stop"] == "terminated"


def test_a_gateway_that_never_listens_ends_the_launch(tmp_path: Path) -> None:
    code, report, records = _launch(tmp_path, "--ready-timeout", "2", FAKE_NEVER_READY="1")
    assert code == 70
    assert [r["role"] for r in records] == ["gateway"]  # the agent never ran
    assert report["gateway_ready_s"] is None and report["drain"] == "not_run"


def test_a_pending_child_is_waited_for_then_reported_and_a_stuck_gateway_killed(
    tmp_path: Path,
) -> None:
    state = tmp_path / "home" / ".openclaw"
    root = Session("agent:main:main", "s-root")
    child = Session("agent:main:subagent:c1", "s-c1", parent="agent:main:main")
    write_stores(
        state, [root, child], runs=[done_run("r1", child.key, root.key, delivery="pending")]
    )
    code, report, _ = _launch(
        tmp_path, "--drain-timeout", "1", "--stop-grace", "1", FAKE_IGNORE_TERM="1"
    )
    assert code == 0
    assert report["drain"] == "timeout" and report["pending_children"] == [child.key]
    assert report["stop"] == "killed"


def test_a_gateway_that_exits_before_it_listens_is_started_again_on_another_port(
    tmp_path: Path,
) -> None:
    code, report, records = _launch(tmp_path, FAKE_FAIL_FIRST="1")
    first, second, agent = records
    assert code == 0 and report["gateway_ready_s"] is not None
    assert (first["role"], second["role"], agent["role"]) == ("gateway", "gateway", "agent")
    assert agent["port"] == second["port"]


def test_a_port_that_accepts_is_not_ready_until_the_gateway_says_it_listens(
    tmp_path: Path,
) -> None:
    """A listener on the port is not proof it is ours (a concurrent sample's Gateway may
    hold the port a moment): without its own "listening" line the launch gives up."""
    code, report, records = _launch(tmp_path, "--ready-timeout", "3", FAKE_SILENT="1")
    assert code == 70 and [r["role"] for r in records] == ["gateway"]
    assert report["stop"] == "terminated"  # the silent one was still running: stopped


def test_a_drained_reading_counts_once_the_stores_stayed_unchanged(tmp_path: Path) -> None:
    """OpenClaw 2026.9.6 marks a delivery delivered once the requester's announce turn is
    accepted, and writes the turn's `running` window without awaiting it: the stores
    read drained while the turn is still to run. Its writes restart the quiet period."""
    state = tmp_path / ".openclaw"
    root = Session("agent:main:main", "s-root")
    child = Session("agent:main:subagent:c1", "s-c1", parent=root.key)
    write_stores(state, [root, child], runs=[done_run("r1", child.key, root.key)])
    agent_db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    last_write = 0.0

    def announce_turn() -> None:  # what the late turn writes, a step at a time
        nonlocal last_write
        steps = [
            "INSERT INTO transcript_events VALUES ('s-root', 0, '{}', 0, NULL, 2, NULL)",
            "UPDATE session_windows SET status = 'running' WHERE session_id = 's-root'",
            "INSERT INTO transcript_events VALUES ('s-root', 1, '{}', 0, NULL, 2, NULL)",
            "UPDATE session_windows SET status = 'done' WHERE session_id = 's-root'",
        ]
        for sql in steps:
            time.sleep(0.4)
            with sqlite3.connect(agent_db) as con:
                con.execute(sql)
            last_write = time.monotonic()

    turn = threading.Thread(target=announce_turn)
    turn.start()
    report = Report()
    wait_drained(state, timeout_s=60, report=report, quiet_s=1.0)
    ended = time.monotonic()
    turn.join()
    assert report.drain == "drained" and report.pending_children == []
    assert last_write and ended - last_write >= 1.0  # the turn's last write, then quiet

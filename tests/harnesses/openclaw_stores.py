"""Small OpenClaw stores for the reader's tests: the tables and columns 2026.9.6 writes
that `roller.harnesses.openclaw.store` reads, filled with the rows a test needs.

Shapes are copied from real stores (tests/data/harnesses/openclaw/*/native/): only the
read columns are created. Events are written as text, or zstd-compressed as OpenClaw
does for large ones (`event_zstd` + `event_utf8_bytes`).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backports import zstd

AGENT_SCHEMA = """
CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL,
  status TEXT, parent_session_key TEXT, spawned_by TEXT);
CREATE TABLE session_nodes (session_key TEXT PRIMARY KEY, current_session_id TEXT NOT NULL,
  entry_json TEXT NOT NULL, parent_session_key TEXT);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
  event_json TEXT, created_at INTEGER, event_zstd BLOB, event_utf8_bytes INTEGER,
  navigation_json TEXT, PRIMARY KEY (session_id, seq));
CREATE TABLE session_pending_inputs (seq INTEGER PRIMARY KEY, input_id TEXT);
"""
STATE_SCHEMA = """
CREATE TABLE subagent_runs (run_id TEXT PRIMARY KEY, child_session_key TEXT NOT NULL,
  controller_session_key TEXT, requester_session_key TEXT NOT NULL, created_at INTEGER,
  payload_json TEXT NOT NULL);
CREATE TABLE task_runs (task_id TEXT PRIMARY KEY, runtime TEXT NOT NULL, run_id TEXT,
  requester_session_key TEXT, child_session_key TEXT, status TEXT NOT NULL,
  delivery_status TEXT NOT NULL, progress_summary TEXT);
"""


def assistant(
    eid: str,
    response_id: str | None,
    run_id: str,
    calls: list[tuple[str, str]] = (),
    api: str = "openai-completions",
) -> dict[str, Any]:  # type: ignore[assignment]
    content = [
        {"type": "toolCall", "id": cid, "name": name, "arguments": {}} for cid, name in calls
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content or [{"type": "text", "text": "done"}],
        "api": api,
        "__openclaw": {"runId": run_id},
    }
    if response_id is not None:
        message["responseId"] = response_id
    return {"type": "message", "id": eid, "message": message}


def accepted(eid: str, tool_call_id: str, child: str, run: str) -> dict[str, Any]:
    details = {"status": "accepted", "childSessionKey": child, "runId": run}
    return {
        "type": "message",
        "id": eid,
        "message": {
            "role": "toolResult",
            "toolCallId": tool_call_id,
            "toolName": "sessions_spawn",
            "content": [{"type": "text", "text": json.dumps(details)}],
            "details": details,
        },
    }


@dataclass
class Session:
    key: str
    session_id: str
    parent: str | None = None
    status: str = "done"
    fork_source: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    compressed: set[int] = field(default_factory=set)  # event positions stored as zstd


def write_stores(
    root: Path,
    sessions: list[Session],
    runs: list[dict[str, Any]] = (),
    tasks: list[tuple[Any, ...]] = (),
    agent: str = "main",
) -> Path:  # type: ignore[assignment]
    """Under `root` (= raw/native/openclaw): the agent store of `agent` and the state store."""
    db = root / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(db)) as con:
        con.executescript(AGENT_SCHEMA)
        for s in sessions:
            con.execute(
                "INSERT INTO session_windows VALUES (?, ?, ?, ?, ?)",
                (s.session_id, s.key, s.status, s.parent, s.parent),
            )
            entry = {
                "sessionId": s.session_id,
                **({"forkSource": {"sessionId": s.fork_source}} if s.fork_source else {}),
            }
            con.execute(
                "INSERT INTO session_nodes VALUES (?, ?, ?, ?)",
                (s.key, s.session_id, json.dumps(entry), s.parent),
            )
            for seq, event in enumerate(s.events):
                text = json.dumps(event)
                if seq in s.compressed:
                    raw = text.encode()
                    con.execute(
                        "INSERT INTO transcript_events VALUES (?, ?, NULL, 0, ?, ?, NULL)",
                        (s.session_id, seq, zstd.compress(raw, level=1), len(raw)),
                    )
                else:
                    con.execute(
                        "INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL, ?, NULL)",
                        (s.session_id, seq, text, len(text.encode())),
                    )
        con.commit()
    state = root / "state" / "openclaw.sqlite"
    state.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(state)) as con:
        con.executescript(STATE_SCHEMA)
        for run in runs:
            con.execute(
                "INSERT INTO subagent_runs VALUES (?, ?, ?, ?, 0, ?)",
                (
                    run["runId"],
                    run["childSessionKey"],
                    run["requesterSessionKey"],
                    run["requesterSessionKey"],
                    json.dumps(run),
                ),
            )
        for n, task in enumerate(tasks):
            con.execute("INSERT INTO task_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (f"t{n}", *task))
        con.commit()
    return root


def done_run(
    run_id: str, child: str, requester: str, delivery: str = "delivered", result: str = "done"
) -> dict[str, Any]:
    return {
        "runId": run_id,
        "childSessionKey": child,
        "requesterSessionKey": requester,
        "execution": {"status": "terminal", "outcome": {"status": "ok"}},
        "delivery": {"status": delivery},
        "completion": {"resultText": result},
        **({"cleanupCompletedAt": 1} if delivery == "delivered" else {}),
    }

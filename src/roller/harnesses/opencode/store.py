"""Reading OpenCode's SQLite store: the rows roller relies on, as typed values.

Checked against OpenCode 1.18.33 (npm `opencode-ai`). Location under the scratch HOME:
`~/.local/share/opencode/opencode.db`, in WAL mode — after the process exits most rows
still sit in `opencode.db-wal`, so the three files are only consistent together.
`roller.harnesses.opencode.collect_native` turns them into one self-contained file (the
SQLite backup API, journal mode DELETE), which is what this module reads.

Tables and fields used (everything else is ignored):
- `session(id, parent_id, title, agent, permission, …)`: one row per OpenCode session.
  A subagent is its own session whose `parent_id` is the calling session; `title` of a
  root starts as OpenCode's default (`New session - <ISO time>`) and is replaced by the
  title agent's answer; a child's title is `<description> (@<agent> subagent)`.
- `message(id, session_id, data)`: `data` is JSON `{role, parentID, agent, finish,
  time: {created, completed?}, error?, …}`. `parentID` is the *user message* an
  assistant message answers, not a parent session.
- `part(id, message_id, session_id, data)`: `data.type` is `text`, `tool`, `step-start`,
  `step-finish`, …; a tool part has `tool`, `callID` (the provider's tool-call id) and
  `state: {status: pending|running|completed|error, input, output?, error?,
  metadata?}`; the `task` tool's `state.metadata` carries `sessionId` (the child) and
  `parentSessionId`.
The provider's response id is stored nowhere.

Rules kept: the database is opened read-only and immutable (it is never modified, and
no `-wal`/`-shm` is created next to it); rows are returned ordered by id so the result
is deterministic; a row that does not have the expected shape is reported in `problems`
and skipped, never raised. Problem codes: `missing_file` (no database),
`unreadable_file` (a database that does not open, or a copy with a `-wal` beside it),
`not_an_object` (a message or part whose `data` is not the JSON object expected).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem, NativeProblemCode

DB_NAME = "opencode.db"


@dataclass(frozen=True)
class StoredSession:
    id: str
    parent_id: str | None
    title: str
    agent: str | None


@dataclass(frozen=True)
class StoredMessage:
    id: str
    session_id: str
    role: str
    finish: str | None
    completed: bool  # `time.completed` is set
    error: str | None  # the error's name (and message when given)


@dataclass(frozen=True)
class StoredPart:
    id: str
    message_id: str
    session_id: str
    type: str
    tool: str | None = None
    call_id: str | None = None
    status: str | None = None
    input: Mapping[str, Any] = field(default_factory=dict)
    output: str | None = None
    error: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Store:
    sessions: tuple[StoredSession, ...]
    messages: tuple[StoredMessage, ...]
    parts: tuple[StoredPart, ...]
    problems: tuple[NativeProblem, ...] = ()


def _object(raw: object) -> dict[str, Any] | None:
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _error_text(error: object) -> str | None:
    if error is None:
        return None
    if not isinstance(error, dict):
        return str(error)
    name = _str(error.get("name")) or "error"
    data = _mapping(error.get("data"))
    message = _str(data.get("message"))
    return f"{name}: {message}" if message else name


def _message(row: tuple[Any, ...], problems: list[NativeProblem]) -> StoredMessage | None:
    mid, session_id, raw = row
    data = _object(raw)
    if data is None or not isinstance(data.get("role"), str):
        message = "data is not a JSON object with a role"
        problems.append(NativeProblem("not_an_object", message, f"message {mid}"))
        return None
    time = _mapping(data.get("time"))
    return StoredMessage(
        id=mid,
        session_id=session_id,
        role=data["role"],
        finish=_str(data.get("finish")),
        completed=time.get("completed") is not None,
        error=_error_text(data.get("error")),
    )


def _part(row: tuple[Any, ...], problems: list[NativeProblem]) -> StoredPart | None:
    pid, message_id, session_id, raw = row
    data = _object(raw)
    if data is None or not isinstance(data.get("type"), str):
        message = "data is not a JSON object with a type"
        problems.append(NativeProblem("not_an_object", message, f"part {pid}"))
        return None
    if data["type"] != "tool":
        return StoredPart(id=pid, message_id=message_id, session_id=session_id, type=data["type"])
    state = _mapping(data.get("state"))
    output = state.get("output")
    return StoredPart(
        id=pid,
        message_id=message_id,
        session_id=session_id,
        type="tool",
        tool=_str(data.get("tool")),
        call_id=_str(data.get("callID")),
        status=_str(state.get("status")),
        input=_mapping(state.get("input")),
        output=output if isinstance(output, str) else None,
        error=_error_text(state.get("error")),
        metadata=_mapping(state.get("metadata")),
    )


def read_store(db: Path) -> Store:
    """The sessions, messages and parts of one consolidated `opencode.db` copy.

    A missing or unreadable database gives an empty store whose `problems` say why.
    """
    if not db.is_file():
        return _unread("missing_file", f"{db.name} was not found (the harness wrote no store)")
    if db.with_name(db.name + "-wal").exists():
        # immutable=1 would silently ignore rows still in the WAL.
        message = f"{db.name} has a -wal file beside it: not a consolidated copy"
        return _unread("unreadable_file", message)
    problems: list[NativeProblem] = []
    uri = db.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            session_rows = conn.execute(
                "SELECT id, parent_id, title, agent FROM session ORDER BY id"
            ).fetchall()
            message_rows = conn.execute(
                "SELECT id, session_id, data FROM message ORDER BY id"
            ).fetchall()
            part_rows = conn.execute(
                "SELECT id, message_id, session_id, data FROM part ORDER BY id"
            ).fetchall()
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged page can hold bad UTF-8
        return _unread("unreadable_file", f"{db.name} cannot be read: {exc}")
    sessions = tuple(
        StoredSession(id=sid, parent_id=parent, title=title or "", agent=agent)
        for sid, parent, title, agent in session_rows
    )
    messages = tuple(m for row in message_rows if (m := _message(row, problems)) is not None)
    parts = tuple(p for row in part_rows if (p := _part(row, problems)) is not None)
    return Store(sessions, messages, parts, tuple(problems))


def _unread(code: NativeProblemCode, message: str) -> Store:
    """The empty store of a database that could not be read, saying why."""
    return Store((), (), (), (NativeProblem(code, message),))

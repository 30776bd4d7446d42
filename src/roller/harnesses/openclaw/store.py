"""OpenClaw's native SQLite stores, read into typed records (checked against 2026.9.6).

Where (under `~/.openclaw/`, copied to `raw/native/openclaw/` as consolidated SQLite
files): `agents/<agentId>/agent/openclaw-agent.sqlite`, one per agent (a spawn with
`agentId` writes the target agent's), and `state/openclaw.sqlite`. Tables and fields used:
- `session_windows(session_id, session_key, status, parent_session_key, spawned_by)`;
- `session_nodes(session_key, current_session_id, parent_session_key, entry_json)`,
  `entry_json.spawnDepth` and `entry_json.forkSource.sessionId` (a forked child's source);
- `transcript_events(session_id, seq, event_json | event_zstd, event_utf8_bytes)`: one JSON
  event per row, as text or — for events of 1 KiB and more — a zstd frame whose decoded
  length `event_utf8_bytes` gives. A `message` event's `message` has `role`, `responseId`
  (assistant: the provider's response id), `content[{type: "toolCall", id, name,
  arguments}]`, `toolCallId`/`toolName`/`details` (toolResult), `customType`/`details`
  (custom messages), `idempotencyKey` (user messages) and `__openclaw.runId`; each event's
  `id` and `parentId` (the transcript's chain);
- `session_pending_inputs` (only counted), and `transcript_events` counted by
  `read_progress` (the lifecycle wait's sign that a turn still writes);
- `subagent_runs(run_id, child_session_key, requester_session_key, payload_json)`, the
  payload's `taskRunId`, `execution.status`, `execution.outcome.status`,
  `delivery.status`, `cleanupCompletedAt`, `requesterSettleWake`, `completion.resultText`;
- `task_runs(runtime, run_id, requester_session_key, child_session_key, status,
  delivery_status, progress_summary)`.

`read_store` is pure over the copied files (read with `mode=ro&immutable=1`: nothing is
ever written next to them); `read_progress` reads only what the lifecycle wait needs, from
the live stores while the Gateway runs (`mode=ro`, so SQLite sees the WAL). Problem
codes: `unreadable_file` (a database SQLite cannot read, or a table that is not the shape
above), `not_json` and `not_an_object` (a stored JSON value), `missing_field` (an event
row with neither text nor frame), `undecodable_record` (a zstd frame that does not
decode, or not to the length recorded).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

STATE_DB = "state/openclaw.sqlite"
AGENT_DB_GLOB = "agents/*/agent/openclaw-agent.sqlite"


@dataclass(frozen=True)
class Window:
    """One `session_windows` row: a session id and the key (participant) it belongs to."""

    session_id: str
    session_key: str
    status: str | None
    parent_key: str | None
    db: str


@dataclass(frozen=True)
class Node:
    """One `session_nodes` row: a session key's current id, depth and fork source."""

    session_key: str
    current_session_id: str
    parent_key: str | None
    depth: int | None
    fork_source: str | None
    db: str


@dataclass(frozen=True)
class ToolCallPart:
    id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Event:
    """One readable transcript event, with the fields the facts need lifted out."""

    db: str
    session_id: str
    seq: int
    id: str | None
    type: str | None
    parent_id: str | None = None
    role: str | None = None
    response_id: str | None = None
    run_id: str | None = None
    api: str | None = None
    tool_calls: tuple[ToolCallPart, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    custom_type: str | None = None
    details: Any = None
    text: str = ""
    idempotency_key: str | None = None
    # `runId` as stored, when OpenClaw masked it and `run_id` is read back (`masking`)
    stored_run_id: str | None = None

    @property
    def where(self) -> str:
        return f"{self.db}: session {self.session_id} event {self.seq}"


@dataclass(frozen=True)
class SubagentRun:
    """One `subagent_runs` row (the latest run of one child)."""

    run_id: str
    child_key: str
    requester_key: str
    task_run_id: str | None
    execution: str | None
    outcome: str | None
    delivery: str | None
    cleaned_up: bool
    settle_pending: bool
    result_text: str | None


@dataclass(frozen=True)
class TaskRun:
    """One `task_runs` row (one run: the top-level command or a child)."""

    runtime: str
    run_id: str | None
    requester_key: str | None
    child_key: str | None
    status: str
    delivery: str
    summary: str | None


@dataclass(frozen=True)
class Store:
    """Everything read from the copied stores; `unread_sessions` had an event that could
    not be read (its transcript is incomplete)."""

    windows: tuple[Window, ...] = ()
    nodes: tuple[Node, ...] = ()
    events: tuple[Event, ...] = ()
    subagent_runs: tuple[SubagentRun, ...] = ()
    task_runs: tuple[TaskRun, ...] = ()
    pending_inputs: int = 0
    agent_dbs: tuple[str, ...] = ()
    state_read: bool = False
    unread_sessions: frozenset[str] = field(default_factory=frozenset)
    problems: tuple[NativeProblem, ...] = ()


def _connect(path: Path, live: bool = False) -> sqlite3.Connection:
    mode = "ro" if live else "ro&immutable=1"
    return sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=5.0)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _json_object(text: str | None, where: str, problems: list[NativeProblem]) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(NativeProblem("not_json", f"stored JSON does not parse ({exc})", where))
        return {}
    if not isinstance(value, dict):
        problems.append(NativeProblem("not_an_object", "stored JSON is not an object", where))
        return {}
    return value


def event_text(
    text: str | None, blob: bytes | None, size: int | None, where: str
) -> tuple[str | None, NativeProblem | None]:
    """A row's event JSON text: `event_json`, or the zstd frame decoded to `size` bytes."""
    if text is not None:
        return text, None
    if blob is None:
        return None, NativeProblem("missing_field", "neither event_json nor event_zstd", where)
    try:
        raw = zstd.decompress(blob)
    except zstd.ZstdError as exc:
        return None, NativeProblem("undecodable_record", f"zstd frame: {exc}", where)
    if size is not None and len(raw) != size:
        message = f"the zstd frame decodes to {len(raw)} bytes, the row records {size}"
        return None, NativeProblem("undecodable_record", message, where)
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, NativeProblem("undecodable_record", f"not UTF-8 ({exc})", where)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _event(db: str, session_id: str, seq: int, data: dict[str, Any]) -> Event:
    message = data.get("message")
    msg: dict[str, Any] = message if isinstance(message, dict) else {}
    meta = msg.get("__openclaw")
    content = msg.get("content")
    calls = tuple(
        ToolCallPart(part["id"], str(part.get("name")), part.get("arguments"))
        for part in (content if isinstance(content, list) else [])
        if isinstance(part, dict) and part.get("type") == "toolCall" and _str(part.get("id"))
    )
    return Event(
        db=db,
        session_id=session_id,
        seq=seq,
        id=_str(data.get("id")),
        type=_str(data.get("type")),
        parent_id=_str(data.get("parentId")),
        role=_str(msg.get("role")),
        response_id=_str(msg.get("responseId")),
        run_id=_str(meta.get("runId")) if isinstance(meta, dict) else None,
        api=_str(msg.get("api")),
        tool_calls=calls,
        tool_call_id=_str(msg.get("toolCallId")),
        tool_name=_str(msg.get("toolName")),
        custom_type=_str(msg.get("customType")) or _str(data.get("customType")),
        details=msg.get("details"),
        text=_texts(content),
        idempotency_key=_str(msg.get("idempotencyKey")),
    )


@dataclass
class _AgentDb:
    windows: list[Window] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    pending: int = 0
    unread: set[str] = field(default_factory=set)


def _read_agent_db(con: sqlite3.Connection, db: str, problems: list[NativeProblem]) -> _AgentDb:
    out = _AgentDb()
    rows = con.execute(
        "SELECT session_id, session_key, status, parent_session_key FROM session_windows"
    )
    out.windows = [Window(sid, key, status, parent, db) for sid, key, status, parent in rows]
    for key, current, parent, entry in con.execute(
        "SELECT session_key, current_session_id, parent_session_key, entry_json FROM session_nodes"
    ):
        data = _json_object(entry, f"{db}: session node {key}", problems)
        fork = data.get("forkSource")
        depth = data.get("spawnDepth")
        out.nodes.append(
            Node(
                session_key=key,
                current_session_id=current,
                parent_key=parent,
                depth=depth if isinstance(depth, int) else None,
                fork_source=_str(fork.get("sessionId")) if isinstance(fork, dict) else None,
                db=db,
            )
        )
    for sid, seq, text, blob, size in con.execute(
        "SELECT session_id, seq, event_json, event_zstd, event_utf8_bytes "
        "FROM transcript_events ORDER BY session_id, seq"
    ):
        where = f"{db}: session {sid} event {seq}"
        body, problem = event_text(text, blob, size, where)
        data = _json_object(body, where, problems) if problem is None else {}
        if problem is not None:
            problems.append(problem)
        if not data:
            out.unread.add(sid)
            continue
        out.events.append(_event(db, sid, seq, data))
    out.pending = int(con.execute("SELECT count(*) FROM session_pending_inputs").fetchone()[0])
    return out


def _runs(con: sqlite3.Connection, db: str, problems: list[NativeProblem]) -> Iterator[SubagentRun]:
    for run_id, child, requester, payload in con.execute(
        "SELECT run_id, child_session_key, requester_session_key, payload_json FROM subagent_runs"
    ):
        data = _json_object(payload, f"{db}: subagent run {run_id}", problems)
        execution = _obj(data.get("execution"))
        outcome = _obj(execution.get("outcome"))
        delivery = _obj(data.get("delivery"))
        completion = _obj(data.get("completion"))
        yield SubagentRun(
            run_id=run_id,
            child_key=child,
            requester_key=requester,
            task_run_id=_str(data.get("taskRunId")),
            execution=_str(execution.get("status")),
            outcome=_str(outcome.get("status")),
            delivery=_str(delivery.get("status")),
            cleaned_up=data.get("cleanupCompletedAt") is not None,
            settle_pending=bool(data.get("requesterSettleWake")),
            result_text=_str(completion.get("resultText")),
        )


def _read_state_db(
    con: sqlite3.Connection, problems: list[NativeProblem]
) -> tuple[tuple[SubagentRun, ...], tuple[TaskRun, ...]]:
    runs = tuple(_runs(con, STATE_DB, problems))
    tasks = tuple(
        TaskRun(*row)
        for row in con.execute(
            "SELECT runtime, run_id, requester_session_key, child_session_key, status, "
            "delivery_status, progress_summary FROM task_runs"
        )
    )
    return runs, tasks


def read_store(root: Path) -> Store:
    """The stores copied under `root` (`raw/native/openclaw/`); never raises."""
    problems: list[NativeProblem] = []
    merged = _AgentDb()
    dbs: list[str] = []
    for path in sorted(root.glob(AGENT_DB_GLOB)):
        rel = path.relative_to(root).as_posix()
        try:
            with closing(_connect(path)) as con:
                one = _read_agent_db(con, rel, problems)
        except sqlite3.Error as exc:
            problems.append(NativeProblem("unreadable_file", f"SQLite: {exc}", rel))
            continue
        dbs.append(rel)
        merged.windows += one.windows
        merged.nodes += one.nodes
        merged.events += one.events
        merged.pending += one.pending
        merged.unread |= one.unread
    runs: tuple[SubagentRun, ...] = ()
    tasks: tuple[TaskRun, ...] = ()
    state_read = False
    if (root / STATE_DB).is_file():
        try:
            with closing(_connect(root / STATE_DB)) as con:
                runs, tasks = _read_state_db(con, problems)
            state_read = True
        except sqlite3.Error as exc:
            problems.append(NativeProblem("unreadable_file", f"SQLite: {exc}", STATE_DB))
    return Store(
        windows=tuple(merged.windows),
        nodes=tuple(merged.nodes),
        events=tuple(merged.events),
        subagent_runs=runs,
        task_runs=tasks,
        pending_inputs=merged.pending,
        agent_dbs=tuple(dbs),
        state_read=state_read,
        unread_sessions=frozenset(merged.unread),
        problems=tuple(problems),
    )


@dataclass(frozen=True)
class Progress:
    """What the lifecycle wait reads from the live stores: run state, and how many
    transcript events there are (not the events: a turn that writes one has moved on)."""

    window_status: tuple[str | None, ...]
    pending_inputs: int
    subagent_runs: tuple[SubagentRun, ...]
    task_runs: tuple[TaskRun, ...]
    transcript_events: int


def read_progress(root: Path) -> Progress:
    """The live stores' run state under `root` (`~/.openclaw`); raises sqlite3.Error.

    The state store is read first: OpenClaw commits a delivery's end there after the
    agent store's side of it (the input staged, the window's status), so the agent
    stores, read second, are at least as recent as the deliveries just read."""
    runs: tuple[SubagentRun, ...] = ()
    tasks: tuple[TaskRun, ...] = ()
    if (root / STATE_DB).is_file():
        with closing(_connect(root / STATE_DB, live=True)) as con:
            runs, tasks = _read_state_db(con, [])
    statuses: list[str | None] = []
    pending = events = 0
    for path in sorted(root.glob(AGENT_DB_GLOB)):
        with closing(_connect(path, live=True)) as con:
            statuses += [s for (s,) in con.execute("SELECT status FROM session_windows")]
            row = con.execute("SELECT count(*) FROM session_pending_inputs").fetchone()
            pending += int(row[0])
            events += int(con.execute("SELECT count(*) FROM transcript_events").fetchone()[0])
    return Progress(tuple(statuses), pending, runs, tasks, events)

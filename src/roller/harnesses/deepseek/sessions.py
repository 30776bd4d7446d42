"""Reading DeepSeek Harness's session logs and roller's driver record, as typed values.

Checked against deepseek-harness 0.2.1rc2 (profiles `sdk-minimal` and `sdk`), real runs
through roller's driver. Locations under the scratch HOME (`DSH_HOME` = `~/.dsh`),
copied by `collect_native` to `raw/native/`:
- `sessions/<cwd slug>/<session id>/session.v4.jsonl`: one file per agent (children
  beside their root). roller's launch turns the `sdk` profile's zstd compression off
  (`compression: none`, as `sdk-minimal` ships), so the files are plain JSON lines; a
  `session.v4.jsonl.zstd` found anyway is reported `unsupported` (Python 3.11 has no
  zstd), never guessed at. Line 1 is the header `{type: session, version: 4, id,
  createdAt, cwd, parentSession?, isSeeded, origin?, delegationDepth}`; then events
  `{type, seq, time, data}`. Those used:
  - `assistant/message {message: {content: [{type: tool-call, id, name} | …]}}`: one
    completed model response;
  - `session-log-deepseek/delivery-accepted {sessionId, throughSeq}`: the request that
    carried the log up to `throughSeq` was accepted (its `run_id`);
  - `tool/call {callId, name}`, `subagent/catalog {childId, mode, label}` (the parent
    created that child), `tool/result {message: {toolCallId, content, isError}}` (a
    spawn's result
    says `started subagent <childId>`);
  - `user/message {source: {kind: subagent-settled, senderSessionId}, content}`: a
    finished child's notice entering its parent's next turn;
  - `session/end-seed`: a forked child's inherited events end here (seq < it are the
    parent's copied turns); `subagent/descriptor {provider: spawn|fork}`;
  - `turn/start`, `turn/end {reason: {kind}}`.
- `roller/driver.jsonl`: what roller's driver (`roller.harnesses.deepseek.driver`) saw on
  the SDK's side channel: `driver.started {profile, session_id}`, `subagent.started`,
  `subagent.finished {childSessionId, status, stopReason}`, `notice.consumed`, and
  `settled {outcome, pending}`.

Problem codes: `missing_file` (no session log, no driver record), `unreadable_file`,
`not_json`, `not_an_object`, `missing_header` (a log whose first line is not the session
header), `unsupported` (another format version, a compressed log), `foreign_record` (a
log whose header names another session than its directory).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem, read_native_bytes

SESSIONS = "sessions"
LOG_NAME = "session.v4.jsonl"
RECORD = "roller/driver.jsonl"
FORMAT_VERSION = 4


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class SessionLog:
    """One agent's log: its header fields and events, in file order."""

    path: str  # relative to raw/native/
    id: str
    parent_id: str | None
    seeded: bool
    depth: int | None
    events: tuple[Event, ...]


@dataclass(frozen=True)
class DriverRecord:
    lines: tuple[dict[str, Any], ...]
    present: bool


def _object_lines(
    text: str, rel: str, problems: list[NativeProblem]
) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            problems.append(NativeProblem("not_json", "not a JSON line", f"{rel}:{n}"))
            continue
        if not isinstance(value, dict):
            problems.append(NativeProblem("not_an_object", "not a JSON object", f"{rel}:{n}"))
            continue
        out.append((n, value))
    return out


def _event(n: int, value: dict[str, Any], rel: str, problems: list[NativeProblem]) -> Event | None:
    seq, kind, data = value.get("seq"), value.get("type"), value.get("data")
    if type(seq) is not int or not isinstance(kind, str):
        problems.append(
            NativeProblem("not_an_object", "an event without seq and type", f"{rel}:{n}")
        )
        return None
    return Event(seq, kind, data if isinstance(data, dict) else {})


def read_log(native_dir: Path, rel: str, problems: list[NativeProblem]) -> SessionLog | None:
    """One copied session log, or None (with a problem) when it cannot be read."""
    data = read_native_bytes(native_dir / rel, rel, problems)
    if data is None:
        return None
    lines = _object_lines(data.decode("utf-8", errors="replace"), rel, problems)
    if not lines or lines[0][1].get("type") != "session":
        problems.append(NativeProblem("missing_header", "no session header line", rel))
        return None
    header = lines[0][1]
    if header.get("version") != FORMAT_VERSION or not isinstance(header.get("id"), str):
        problems.append(NativeProblem("unsupported", "not a version 4 session header", rel))
        return None
    if header["id"] != Path(rel).parent.name:
        message = f"the header names session {header['id']}, not its directory's"
        problems.append(NativeProblem("foreign_record", message, rel))
        return None
    events = (_event(n, v, rel, problems) for n, v in lines[1:])
    parent = header.get("parentSession")
    depth = header.get("delegationDepth")
    return SessionLog(
        path=rel,
        id=header["id"],
        parent_id=parent if isinstance(parent, str) and parent else None,
        seeded=header.get("isSeeded") is True,
        depth=depth if type(depth) is int else None,
        events=tuple(e for e in events if e is not None),
    )


def read_logs(native_dir: Path, problems: list[NativeProblem]) -> tuple[SessionLog, ...]:
    """Every session log under `raw/native/sessions/`, in path order."""
    root = native_dir / SESSIONS
    if not root.is_dir():
        problems.append(NativeProblem("missing_file", "no session logs were copied", SESSIONS))
        return ()
    for packed in sorted(root.glob(f"*/*/{LOG_NAME}.zstd")):
        rel = packed.relative_to(native_dir).as_posix()
        message = "a zstd-compressed session log (Python 3.11 cannot read it)"
        problems.append(NativeProblem("unsupported", message, rel))
    logs = (
        read_log(native_dir, p.relative_to(native_dir).as_posix(), problems)
        for p in sorted(root.glob(f"*/*/{LOG_NAME}"))
    )
    return tuple(log for log in logs if log is not None)


def read_record(native_dir: Path, problems: list[NativeProblem]) -> DriverRecord:
    path = native_dir / RECORD
    if not path.is_file():
        problems.append(NativeProblem("missing_file", "roller's driver record is missing", RECORD))
        return DriverRecord((), present=False)
    data = read_native_bytes(path, RECORD, problems)
    if data is None:
        return DriverRecord((), present=False)
    lines = _object_lines(data.decode("utf-8", errors="replace"), RECORD, problems)
    return DriverRecord(tuple(v for _n, v in lines), present=True)

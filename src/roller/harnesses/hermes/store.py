"""Reading Hermes's native store: `state.db` rows and roller's delegation record, typed.

Checked against Hermes Agent 0.19.0 (PyPI `hermes-agent`), real runs of `hermes -z` with
each API mode. Locations under the scratch HOME (`$HERMES_HOME` = `~/.hermes`):
- `state.db`, SQLite in WAL mode; `collect_native` writes one self-contained copy to
  `raw/native/state.db` (the SQLite backup API), which is what this module reads.
  Tables and fields used (everything else is ignored):
  - `sessions(id, source, parent_session_id, model, model_config, api_call_count,
    end_reason, …)`: one row per agent instance. `id` is `YYYYMMDD_HHMMSS_<6 hex>`;
    `source` is `cli` for the `-z` root and `subagent` for a `delegate_task` child, whose
    `parent_session_id` names its parent and whose `model_config` JSON carries
    `_delegate_from` (the same parent id). `api_call_count` counts the session's model
    calls that returned (a failed call Hermes retried is not counted); `end_reason` is
    set when the agent closed (`agent_close`).
  - `messages(id, session_id, role, content, tool_calls, tool_call_id, tool_name, …)`:
    `role` user/assistant/tool; an assistant row's `tool_calls` is JSON `[{id, call_id,
    response_item_id, type, function: {name, arguments}}]` (`id` = `call_id` = the wire's
    tool-call id; `response_item_id` = the Responses `fc_…` item id, verified against the
    stream); a `tool` row answers `tool_call_id` (tool `tool_name`). The `delegate_task`
    result row's `content` is JSON `{"results": [{task_index, status, summary, …}], …}`.
  The provider's response id is stored nowhere.
- `config.yaml`, roller's own (JSON) config, copied to `raw/native/config.yaml`: its
  `providers.roller.api_mode` says which API ran. Only under `codex_responses` is a
  stored `response_item_id` the wire's item id (in the other modes Hermes makes one up,
  `fc_` + the call id's tail).
- `roller/delegations.jsonl`, written by roller's plugin (`roller.harnesses.hermes.plugin`)
  and copied to `raw/native/roller/delegations.jsonl`: one line per child,
  `{event: subagent_start, parent_session_id, child_session_id, tool_call_id, ordinal}`.

Rules kept: the database is opened read-only and immutable; rows come ordered by their
keys, so the result is deterministic; a row or line without the expected shape is a
problem and skipped, never raised. Problem codes: `missing_file` (no database; no
delegation record), `missing_field` (a stored tool call without an id),
`unreadable_file` (a database that does not open, a copy with a `-wal` beside it, an
unreadable record), `not_json` / `not_an_object` (a delegation line, a `tool_calls` or
`model_config` value, a delegate result).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem, NativeProblemCode, read_native_bytes

DB_NAME = "state.db"
DELEGATIONS = "roller/delegations.jsonl"
CONFIG = "config.yaml"
PROVIDER = "roller"


@dataclass(frozen=True)
class StoredSession:
    id: str
    source: str
    parent_id: str | None
    delegate_from: str | None  # model_config._delegate_from
    model: str | None
    api_calls: int
    end_reason: str | None


@dataclass(frozen=True)
class StoredToolCall:
    id: str
    name: str | None
    item_id: str | None  # Responses `response_item_id`


@dataclass(frozen=True)
class StoredMessage:
    id: int
    session_id: str
    role: str
    content: str | None
    tool_calls: tuple[StoredToolCall, ...]
    tool_call_id: str | None
    tool_name: str | None


@dataclass(frozen=True)
class Delegation:
    """One line of roller's delegation record: a child and the call that created it."""

    line: int
    parent_id: str | None
    child_id: str | None
    tool_call_id: str | None
    ordinal: int | None


@dataclass(frozen=True)
class Store:
    sessions: tuple[StoredSession, ...]
    messages: tuple[StoredMessage, ...]
    delegations: tuple[Delegation, ...]
    problems: tuple[NativeProblem, ...] = ()
    api_mode: str | None = None  # roller's config: which API the run spoke


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _json(raw: object, where: str, problems: list[NativeProblem]) -> Any:
    """A JSON text column, or None (a problem when it is there and not JSON)."""
    if raw is None or raw == "":
        return None
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        problems.append(NativeProblem("not_json", "a JSON column is not JSON", where))
        return None


def _session(row: tuple[Any, ...], problems: list[NativeProblem]) -> StoredSession:
    sid, source, parent, model, config_raw, api_calls, end_reason = row
    config = _json(config_raw, f"session {sid}", problems)
    if config is not None and not isinstance(config, dict):
        problems.append(NativeProblem("not_an_object", "model_config is not an object", sid))
        config = None
    return StoredSession(
        id=sid,
        source=source or "",
        parent_id=_str(parent),
        delegate_from=_str((config or {}).get("_delegate_from")),
        model=_str(model),
        api_calls=api_calls if isinstance(api_calls, int) else 0,
        end_reason=_str(end_reason),
    )


def _tool_calls(
    raw: object, where: str, problems: list[NativeProblem]
) -> tuple[StoredToolCall, ...]:
    value = _json(raw, where, problems)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        problems.append(
            NativeProblem("not_an_object", "tool_calls is not a list of objects", where)
        )
        return ()
    out = []
    for call in value:
        tid = _str(call.get("id")) or _str(call.get("call_id"))
        if tid is None:
            problems.append(NativeProblem("missing_field", "a tool call without an id", where))
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        out.append(
            StoredToolCall(tid, _str(function.get("name")), _str(call.get("response_item_id")))
        )
    return tuple(out)


def _message(row: tuple[Any, ...], problems: list[NativeProblem]) -> StoredMessage:
    mid, session_id, role, content, tool_calls, tool_call_id, tool_name = row
    where = f"message {mid}"
    return StoredMessage(
        id=mid,
        session_id=session_id,
        role=role or "",
        content=content if isinstance(content, str) else None,
        tool_calls=_tool_calls(tool_calls, where, problems),
        tool_call_id=_str(tool_call_id),
        tool_name=_str(tool_name),
    )


def _delegation(n: int, text: str, problems: list[NativeProblem]) -> Delegation | None:
    where = f"{DELEGATIONS}:{n}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        problems.append(NativeProblem("not_json", "not a JSON line", where))
        return None
    if not isinstance(value, dict) or value.get("event") != "subagent_start":
        problems.append(NativeProblem("not_an_object", "not a subagent_start record", where))
        return None
    ordinal = value.get("ordinal")
    return Delegation(
        line=n,
        parent_id=_str(value.get("parent_session_id")),
        child_id=_str(value.get("child_session_id")),
        tool_call_id=_str(value.get("tool_call_id")),
        ordinal=ordinal if type(ordinal) is int else None,
    )


def read_delegations(native_dir: Path, problems: list[NativeProblem]) -> tuple[Delegation, ...]:
    path = native_dir / DELEGATIONS
    if not path.is_file():
        return ()
    data = read_native_bytes(path, DELEGATIONS, problems)
    if data is None:
        return ()
    lines = data.decode("utf-8", errors="replace").splitlines()
    found = (_delegation(n, t, problems) for n, t in enumerate(lines, 1) if t.strip())
    return tuple(d for d in found if d is not None)


def read_api_mode(native_dir: Path) -> str | None:
    """The `api_mode` of roller's provider in the copied config; None when unreadable
    (the config is roller's JSON; one Hermes rewrote as YAML reads as None)."""
    try:
        config = json.loads((native_dir / CONFIG).read_text(encoding="utf-8"))
        return _str(config["providers"][PROVIDER]["api_mode"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_store(native_dir: Path) -> Store:
    """The sessions, messages and delegation records of one attempt's copies.

    A missing or unreadable database gives an empty store whose `problems` say why.
    """
    db = native_dir / DB_NAME
    if not db.is_file():
        return _unread("missing_file", f"{DB_NAME} was not found (the harness wrote no store)")
    if db.with_name(db.name + "-wal").exists():
        return _unread(
            "unreadable_file", f"{DB_NAME} has a -wal beside it: not a consolidated copy"
        )
    problems: list[NativeProblem] = []
    uri = db.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            session_rows = conn.execute(
                "SELECT id, source, parent_session_id, model, model_config, api_call_count,"
                " end_reason FROM sessions ORDER BY id"
            ).fetchall()
            message_rows = conn.execute(
                "SELECT id, session_id, role, content, tool_calls, tool_call_id, tool_name"
                " FROM messages ORDER BY id"
            ).fetchall()
    except sqlite3.Error as exc:
        return _unread("unreadable_file", f"{DB_NAME} cannot be read: {exc}")
    sessions = tuple(_session(row, problems) for row in session_rows)
    messages = tuple(_message(row, problems) for row in message_rows)
    delegations = read_delegations(native_dir, problems)
    return Store(sessions, messages, delegations, tuple(problems), read_api_mode(native_dir))


def _unread(code: NativeProblemCode, message: str) -> Store:
    return Store((), (), (), (NativeProblem(code, message, DB_NAME),))

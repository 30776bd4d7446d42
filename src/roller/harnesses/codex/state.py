"""Codex's thread index (`state_5.sqlite`): reading the consistent copy collect made.

Checked against codex-cli 0.171.0. The database lives at `$CODEX_HOME/state_5.sqlite`
in WAL mode (a `-wal`/`-shm` pair may sit beside it after Codex exits). Roller relies on:
- `threads(id, rollout_path, source, thread_source, agent_nickname, agent_path, …)`:
  one row per thread; `source` is the JSON of the rollout's `session_meta.source`;
- `thread_spawn_edges(parent_thread_id, child_thread_id PRIMARY KEY, status)`: one row
  per spawned thread (`status` stays `open` after a v1 child completes).

Rules kept: the copy is one self-contained file with the WAL's committed rows
(`roller.harnesses.native_files.snapshot_sqlite`); the reader opens it read-only and
immutable, so reading never writes beside it. A missing or unreadable database is a
problem, not an exception (codes `missing_file`, `unreadable_file`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem

STATE_DB = "state_5.sqlite"
# Beside the copy's place when the copy failed: the reason, for the reader's problem.
COPY_ERROR_SUFFIX = ".copy-error.txt"


@dataclass(frozen=True)
class ThreadRow:
    thread_id: str
    rollout_name: str  # the file name of `rollout_path` (the copy has other directories)
    parent_thread_id: str | None  # from `source.subagent.thread_spawn`
    thread_source: str | None
    agent_path: str | None
    agent_nickname: str | None


@dataclass(frozen=True)
class SpawnEdge:
    parent_thread_id: str
    child_thread_id: str
    status: str


@dataclass(frozen=True)
class StateIndex:
    threads: dict[str, ThreadRow]
    edges: dict[str, SpawnEdge]  # child thread id -> edge


def _parent_from_source(source: str | None) -> str | None:
    try:
        data: Any = json.loads(source) if source else None
    except json.JSONDecodeError:
        return None
    spawn = data.get("subagent", {}).get("thread_spawn") if isinstance(data, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if isinstance(parent, str) and parent else None


def read_state_db(path: Path, problems: list[NativeProblem]) -> StateIndex | None:
    """The thread index from a copy made by `snapshot_sqlite`, or None (with a problem)."""
    if not path.is_file():
        why = path.with_name(f"{path.name}{COPY_ERROR_SUFFIX}")
        detail = f" (copy failed: {why.read_text().strip()})" if why.is_file() else ""
        message = f"{path.name} is missing{detail}: threads and spawn edges not cross-checked"
        problems.append(NativeProblem("missing_file", message))
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            thread_rows = conn.execute(
                "SELECT id, rollout_path, source, thread_source, agent_path, agent_nickname "
                "FROM threads"
            ).fetchall()
            edge_rows = conn.execute(
                "SELECT parent_thread_id, child_thread_id, status FROM thread_spawn_edges"
            ).fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged page can hold bad UTF-8
        problems.append(NativeProblem("unreadable_file", f"{path.name} is unreadable: {exc}"))
        return None
    threads = {
        str(tid): ThreadRow(
            thread_id=str(tid),
            rollout_name=Path(str(rollout)).name,
            parent_thread_id=_parent_from_source(source),
            thread_source=thread_source,
            agent_path=agent_path,
            agent_nickname=nickname,
        )
        for tid, rollout, source, thread_source, agent_path, nickname in thread_rows
    }
    edges = {
        str(child): SpawnEdge(str(parent), str(child), str(status))
        for parent, child, status in edge_rows
    }
    return StateIndex(threads, edges)

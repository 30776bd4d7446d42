"""Codex rollout traces: which `exec` call made each nested tool call (code mode).

Checked against codex-cli 0.171.0 (runs of 2026-12-01; docs/harnesses.md, "Codex CLI").
In code mode a script run by the freeform `exec` tool calls tools itself
(`await tools.multi_agent_v1__spawn_agent(…)`); the rollout records such a nested call
only as an `item_completed` item whose `id` is a fresh `exec-<uuid>`, naming no `exec`
call. The link is in Codex's rollout trace, which it writes when
`CODEX_ROLLOUT_TRACE_ROOT` is set (roller's launch sets it): one directory per process,
`trace-<trace id>-<root thread id>/` with `manifest.json` and `trace.jsonl`, copied to
`raw/native/rollout-trace/` (its zstd `payloads/` are not: the tape has every byte).

`trace.jsonl`: one JSON object a line, `{"schema_version": 3, "seq", "thread_id",
"codex_turn_id", "payload": {"type", …}}`; only these payloads are relied on:
- `code_cell_started {runtime_cell_id, model_visible_call_id}`: the `exec` call (the
  `call_id` the model gave it) that runs the cell;
- `tool_call_started {tool_call_id, requester: {"type": "code_cell", runtime_cell_id},
  kind: {"type": …}}`: a nested call of that cell; `tool_call_id` is the `item.id` of the
  rollout's `CollabAgentToolCall` / `SubAgentActivity` for it.
A cell id is unique within its thread only (`"1"` in the root, `"g2:1"` in a child), so a
cell is (thread, cell id). Pure: text in, values out; nothing is guessed. Problem
codes: `unreadable_file` (a trace file that cannot be read), `not_json` (a line),
`disagreement` (a nested call two traces give different facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem
from roller.harnesses.codex.jsonl import json_lines, read_text

TRACES = "rollout-trace"
TRACE_FILE = "trace.jsonl"
TRACE_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class NestedCall:
    """A tool call a code cell made, and the `exec` call that ran the cell."""

    tool_call_id: str
    thread_id: str
    kind: str | None  # `spawn_agent`, `wait_agent`, `exec_command`, …
    exec_call_id: str | None  # None: the trace has no start for its cell
    file: str  # the trace file, relative to the native dir
    ref: str  # `seq N` of the nested call's start
    cell_ref: str | None  # `seq N` of its cell's start

    @property
    def where(self) -> str:
        return f"{self.file}: {self.ref}"


@dataclass(frozen=True)
class Trace:
    """Every nested call the copied traces name, by its tool-call id."""

    nested: dict[str, NestedCall]
    files: tuple[str, ...]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_traces(native_dir: Path, problems: list[NativeProblem]) -> Trace:
    """Every `rollout-trace/*/trace.jsonl` under `native_dir` (none: an empty trace)."""
    root = native_dir / TRACES
    files = sorted(root.glob(f"*/{TRACE_FILE}")) if root.is_dir() else []
    nested: dict[str, NestedCall] = {}
    for path in files:
        rel = path.relative_to(native_dir).as_posix()
        text = read_text(path, rel, problems)
        if text is None:
            continue
        for call in parse_trace(text, rel, problems):
            known = nested.setdefault(call.tool_call_id, call)
            if (known.thread_id, known.exec_call_id) != (call.thread_id, call.exec_call_id):
                message = f"nested call {call.tool_call_id} is also {known.where}, with other facts"
                problems.append(NativeProblem("disagreement", message, call.where))
    return Trace(nested, tuple(p.relative_to(native_dir).as_posix() for p in files))


def parse_trace(text: str, rel: str, problems: list[NativeProblem]) -> list[NestedCall]:
    """The nested calls of one trace file, each bound to its cell's `exec` call."""
    cells: dict[tuple[str, str], tuple[str, str]] = {}  # (thread, cell) -> (exec call, ref)
    started: list[tuple[str, str, str, str | None, str]] = []
    for number, line in json_lines(text, rel, problems):
        payload = _obj(_obj(line).get("payload"))
        thread = _str(_obj(line).get("thread_id"))
        seq = _obj(line).get("seq")
        where = f"seq {seq}" if isinstance(seq, int) else f"line {number}"
        kind = payload.get("type")
        if kind == "code_cell_started" and thread is not None:
            cell, call = (
                _str(payload.get("runtime_cell_id")),
                _str(payload.get("model_visible_call_id")),
            )
            if cell is not None and call is not None:
                cells[(thread, cell)] = (call, where)
        elif kind == "tool_call_started" and thread is not None:
            requester = _obj(payload.get("requester"))
            cell, tool_call = (
                _str(requester.get("runtime_cell_id")),
                _str(payload.get("tool_call_id")),
            )
            if requester.get("type") == "code_cell" and cell is not None and tool_call is not None:
                tool_kind = _str(_obj(payload.get("kind")).get("type"))
                started.append((tool_call, thread, cell, tool_kind, where))
    out: list[NestedCall] = []
    for tool_call, thread, cell, tool_kind, where in started:
        exec_call, cell_ref = cells.get((thread, cell), (None, None))
        out.append(NestedCall(tool_call, thread, tool_kind, exec_call, rel, where, cell_ref))
    return out

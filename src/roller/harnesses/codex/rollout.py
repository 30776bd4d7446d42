"""Codex rollout files: one thread's native log, parsed into the facts roller relies on.

Checked against codex-cli 0.171.0 (`codex exec`, runs on 2026-11-29 against `roller
mock-model`; real files under `tests/data/harnesses/codex/`). Pure: text in, values out.

Location: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`, one
file per thread (a subagent is its own thread with its own file).

Shape (one JSON object a line, `{timestamp, ordinal, type, payload[, metadata]}`; only
these fields are relied on):
- line 0 `session_meta`: the file's own thread — `id`, `session_id` (the root thread),
  `parent_thread_id`, `forked_from_id`, `thread_source` (`user` | `subagent`),
  `agent_path`, `agent_nickname`, `multi_agent_version`, `source` (`"exec"` or
  `{"subagent": {"thread_spawn": {parent_thread_id, depth, agent_path, agent_nickname}}}`)
  and, for a v2 warm-forked child, `subagent_history_start_ordinal`.
- A warm-forked child's file copies its parent's history after its own `session_meta`:
  a second `session_meta` (the parent's), the parent's items (marked
  `metadata.inherited_user_message`), a `turn_aborted` for the copied turn, then the
  child's own records from `subagent_history_start_ordinal` on. Copied records are the
  parent's facts, never the child's: they are kept apart (`inherited`) and not read.
- `event_msg/task_started|task_complete|turn_aborted` (`turn_id`): the thread's turns.
- `token_usage_record`: one per model response — `thread_id`, `turn_id`, `response_id`.
  `event_msg/token_count` carries totals only (no ids).
- `response_item/function_call` (`id` = the provider item id `fc_…`, `call_id`, `name`,
  `namespace`, `arguments`), `function_call_output` (`call_id`, `output`), `message`,
  `agent_message` (v2: `author`, `recipient`, `content[]`). Items carry
  `metadata.history_sequence` (their position in the thread's history) and, for model
  outputs, `metadata.sampled_through_sequence` (the history the response was sampled on).
- `event_msg/item_completed` (`thread_id`, `item`): `CollabAgentToolCall` (v1: `id` =
  the tool's `call_id`, `tool`, `receiver_thread_ids`) and `SubAgentActivity` (v2: `id` =
  the spawn's `call_id`, `agent_path`).

Rules kept: a record belongs to the thread whose file it is in (outside an inherited
block) and whose explicit ids agree; a record naming another thread is a problem, never
re-assigned. Malformed lines are problems naming file and line, never skipped silently.
Code mode adds `response_item/additional_tools` (a dynamic-tools item), `custom_tool_call`
(`exec`: `input` is the script, `id` the provider's `ctc_…`) and `custom_tool_call_output`
(a list of text parts, kept one a line); a script's nested calls are only
`item_completed` items with `exec-<uuid>` ids (`roller.harnesses.codex.nested`).
Problem codes: `not_json`, `not_an_object` (a line), `missing_header` (no leading
`session_meta`), `missing_field` (no thread id, a `token_usage_record` without
`response_id`, a `function_call` without `call_id`), `unexpected_record` (a
`session_meta` outside an inherited block), `disagreement` (an inherited history not
starting with the `forked_from` thread), `foreign_record` (a record naming another thread).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roller.harnesses.base import NativeProblem
from roller.harnesses.codex.jsonl import json_lines

# Items the model produced (their `sampled_through_sequence` says what input they saw).
_MODEL_OUTPUT_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "reasoning",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "image_generation_call",
    }
)
# Items that mean the thread loaded tool definitions dynamically (code mode's
# `additional_tools` item carries them in the history instead of the request's `tools`).
DYNAMIC_TOOL_ITEMS = frozenset({"tool_search_call", "tool_search_output", "additional_tools"})
# Tool calls the model makes and their outputs; `custom_tool_call` is code mode's
# freeform `exec` (its `input` is the script, its output a list of text parts).
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _obj(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Line:
    """One record of the file: its ordinal and the parsed object."""

    ordinal: int
    record: Mapping[str, Any]

    @property
    def type(self) -> str | None:
        return _str(self.record.get("type"))

    @property
    def payload(self) -> dict[str, Any]:
        return _obj(self.record.get("payload")) or {}

    @property
    def item_type(self) -> str | None:
        return _str(self.payload.get("type"))

    def metadata_int(self, key: str) -> int | None:
        return _int((_obj(self.record.get("metadata")) or {}).get(key))


@dataclass(frozen=True)
class ToolCall:
    ordinal: int
    call_id: str
    item_id: str | None
    name: str | None
    namespace: str | None
    arguments: str | None  # a custom tool call's `input` (a code-mode script)
    item: str = "function_call"  # or `custom_tool_call`


@dataclass(frozen=True)
class ToolOutput:
    ordinal: int
    call_id: str
    output: str
    history_sequence: int | None


@dataclass(frozen=True)
class Delivered:
    """A message item that put another thread's result into this thread's history."""

    ordinal: int
    kind: str  # "subagent_notification" (v1 user message) | "agent_message" (v2)
    text: str
    sender: str | None  # v1: the child's thread id; v2: the child's agent path
    status: Mapping[str, Any]
    history_sequence: int | None


@dataclass(frozen=True)
class ResponseRecord:
    """One model response of the thread, closed by its `token_usage_record`."""

    ordinal: int
    response_id: str
    turn_id: str | None
    # the highest `sampled_through_sequence` among the response's output items (None
    # when they carried none): input with a higher history sequence was not seen.
    sampled_through: int | None


@dataclass
class Rollout:
    """One rollout file, split into the thread's own records and inherited ones."""

    path: str  # relative to the native dir
    thread_id: str
    meta: dict[str, Any]
    own: list[Line] = field(default_factory=list)
    inherited: list[Line] = field(default_factory=list)
    forked_from: list[str] = field(default_factory=list)  # ids of copied session_metas

    # facts from own records, filled by `_index`
    turn_events: list[tuple[int, str, str | None, str | None]] = field(default_factory=list)
    responses: list[ResponseRecord] = field(default_factory=list)
    token_counts: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    outputs: dict[str, ToolOutput] = field(default_factory=dict)
    collab: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # call_id -> items
    collab_at: dict[str, int] = field(default_factory=dict)  # call_id -> first item's ordinal
    delivered: list[Delivered] = field(default_factory=list)
    dynamic_tools: list[tuple[int, str]] = field(default_factory=list)

    @property
    def parent_thread_id(self) -> str | None:
        return _str(self.meta.get("parent_thread_id"))

    @property
    def thread_spawn(self) -> dict[str, Any]:
        source = _obj(self.meta.get("source")) or {}
        return _obj((_obj(source.get("subagent")) or {}).get("thread_spawn")) or {}

    @property
    def agent_path(self) -> str | None:
        return _str(self.meta.get("agent_path")) or _str(self.thread_spawn.get("agent_path"))

    @property
    def state(self) -> tuple[str, Line | None]:
        """(`completed` | `failed` | `running` | `unknown`, the deciding line)."""
        if not self.turn_events:
            return "unknown", None
        ordinal, kind, _turn, _reason = self.turn_events[-1]
        line = next((x for x in self.own if x.ordinal == ordinal), None)
        return {"task_complete": "completed", "turn_aborted": "failed"}.get(kind, "running"), line

    def consuming_response(self, after: int, history_sequence: int | None) -> str | None:
        """The first later response of this thread whose input included the item at
        ordinal `after` (history sequence `history_sequence`), by the native log's own
        sampling record; None when no later response saw it."""
        for response in self.responses:
            if response.ordinal <= after:
                continue
            if (
                history_sequence is not None
                and response.sampled_through is not None
                and response.sampled_through < history_sequence
            ):
                continue  # sampled before the item entered the history
            return response.response_id
        return None


def parse_rollout(text: str, rel: str, problems: list[NativeProblem]) -> Rollout | None:
    """Parse one rollout file; problems are appended, never raised."""
    lines: list[Line] = []
    for number, record in json_lines(text, rel, problems):
        if not isinstance(record, dict):
            problems.append(NativeProblem("not_an_object", "not a JSON object", f"{rel}:{number}"))
            continue
        ordinal = _int(record.get("ordinal"))
        lines.append(Line(ordinal if ordinal is not None else len(lines), record))
    if not lines or lines[0].type != "session_meta":
        message = "does not start with a session_meta record"
        problems.append(NativeProblem("missing_header", message, rel))
        return None
    meta = lines[0].payload
    thread_id = _str(meta.get("id"))
    if thread_id is None:
        problems.append(NativeProblem("missing_field", "session_meta has no thread id", rel))
        return None
    rollout = Rollout(rel, thread_id, meta)
    start = _int(meta.get("subagent_history_start_ordinal"))
    for line in lines[1:]:
        if start is not None and line.ordinal < start:
            rollout.inherited.append(line)
            if line.type == "session_meta":
                copied = _str(line.payload.get("id"))
                if copied is not None:
                    rollout.forked_from.append(copied)
        elif line.type == "session_meta":
            message = "a session_meta outside an inherited history block"
            problems.append(NativeProblem("unexpected_record", message, f"{rel}: #{line.ordinal}"))
        else:
            rollout.own.append(line)
    if rollout.inherited and _str(meta.get("forked_from_id")) not in rollout.forked_from:
        message = "inherited history does not start with the forked_from thread"
        problems.append(NativeProblem("disagreement", message, rel))
    _index(rollout, problems)
    return rollout


def _output_text(output: object) -> str:
    """A tool output as text: a string as is; content parts' texts one a line (an `exec`
    output), as the request carries them; anything else as sorted JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) for p in output):
        return "\n".join(p["text"] for p in output if isinstance(p.get("text"), str))
    return json.dumps(output, sort_keys=True)


def _text_parts(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


_NOTIFICATION_OPEN = "<subagent_notification>"
_NOTIFICATION_CLOSE = "</subagent_notification>"
_FINAL_ANSWER = "Message Type: FINAL_ANSWER"


def _parse_notification(text: str) -> tuple[str | None, dict[str, Any]] | None:
    body = text.strip()
    if not (body.startswith(_NOTIFICATION_OPEN) and body.endswith(_NOTIFICATION_CLOSE)):
        return None
    try:
        data = json.loads(body[len(_NOTIFICATION_OPEN) : -len(_NOTIFICATION_CLOSE)])
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    return _str(data.get("agent_path")), _obj(data.get("status")) or {}


def _index(rollout: Rollout, problems: list[NativeProblem]) -> None:
    """Collect the facts of the thread's own records."""
    rel, me = rollout.path, rollout.thread_id
    sampled: int | None = None
    for line in rollout.own:
        payload, kind, item = line.payload, line.type, line.item_type
        where = f"{rel}: #{line.ordinal}"
        named = _str(payload.get("thread_id"))
        if kind in ("token_usage_record", "event_msg") and named is not None and named != me:
            message = f"{item or kind} names thread {named}, not the file's {me}"
            problems.append(NativeProblem("foreign_record", message, where))
            continue
        if kind == "event_msg":
            if item in ("task_started", "task_complete", "turn_aborted"):
                rollout.turn_events.append(
                    (line.ordinal, item, _str(payload.get("turn_id")), _str(payload.get("reason")))
                )
            elif item == "token_count" and payload.get("info") is not None:
                rollout.token_counts += 1
            elif item == "item_completed":
                done = _obj(payload.get("item")) or {}
                if done.get("type") in ("CollabAgentToolCall", "SubAgentActivity"):
                    key = _str(done.get("id"))
                    if key is not None:
                        rollout.collab.setdefault(key, []).append(done)
                        rollout.collab_at.setdefault(key, line.ordinal)
        elif kind == "token_usage_record":
            response_id = _str(payload.get("response_id"))
            if response_id is None:
                message = "token_usage_record without a response_id"
                problems.append(NativeProblem("missing_field", message, where))
                continue
            rollout.responses.append(
                ResponseRecord(line.ordinal, response_id, _str(payload.get("turn_id")), sampled)
            )
            sampled = None
        elif kind == "response_item":
            seq = line.metadata_int("sampled_through_sequence")
            is_output = item in _MODEL_OUTPUT_ITEMS or (
                item == "message" and payload.get("role") == "assistant"
            )
            if is_output and seq is not None:
                sampled = seq if sampled is None else max(sampled, seq)
            _index_item(rollout, line, where, problems)


def _index_item(rollout: Rollout, line: Line, where: str, problems: list[NativeProblem]) -> None:
    payload, item = line.payload, line.item_type
    history = line.metadata_int("history_sequence")
    if item in DYNAMIC_TOOL_ITEMS:
        rollout.dynamic_tools.append((line.ordinal, item or ""))
    if item in _CALLS:
        call_id = _str(payload.get("call_id"))
        if call_id is None:
            message = f"{item} without a call_id"
            problems.append(NativeProblem("missing_field", message, where))
            return
        raw = payload.get(_CALLS[item])
        rollout.tool_calls.append(
            ToolCall(
                line.ordinal,
                call_id,
                _str(payload.get("id")),
                _str(payload.get("name")),
                _str(payload.get("namespace")),
                raw if isinstance(raw, str) else None,
                item,
            )
        )
    elif item in _OUTPUTS:
        call_id = _str(payload.get("call_id"))
        output = payload.get("output")
        if call_id is not None:
            rollout.outputs[call_id] = ToolOutput(
                line.ordinal, call_id, _output_text(output), history
            )
    elif item == "message" and payload.get("role") == "user":
        text = _text_parts(payload.get("content"))
        parsed = _parse_notification(text)
        if parsed is not None:
            sender, status = parsed
            rollout.delivered.append(
                Delivered(line.ordinal, "subagent_notification", text, sender, status, history)
            )
    elif item == "agent_message":
        text = _text_parts(payload.get("content"))
        if text.startswith(_FINAL_ANSWER):
            rollout.delivered.append(
                Delivered(
                    line.ordinal,
                    "agent_message",
                    text,
                    _str(payload.get("author")),
                    {"completed": text},
                    history,
                )
            )

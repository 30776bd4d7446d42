"""`--format parquet`: calls and main trajectories as Parquet tables (pyarrow).

Calls: one row per `roller.export.openai_messages/v1` record, its nested JSON flattened
into typed columns. Chat messages are a typed list column (`role`, `content` — the text
when the content is a plain string —, `content_parts` — the content as JSON when it is
a list of parts —, `tool_calls`, `tool_call_id`, `reasoning_content`), so
`datasets.load_dataset("parquet", …)` yields ready `messages`; values whose shape varies
by provider (tool schemas, request params, origins) are JSON text columns (`*_json`).

Trajectories: one row per segment of each built main trajectory: the segment's
conversation as chat messages (system prompt first), its first tool snapshot as chat
tools, and the verbatim items (`items_json`, injections included).

pyarrow is an optional dependency (`pip install 'roller[export]'`); without it the
export stops with that instruction before writing anything.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from operator import is_
from pathlib import Path
from typing import Any

from roller.capture.trajectory_record import TrajectoryRecord
from roller.errors import UsageError
from roller.export.omissions import Omissions
from roller.wire import codec_named

INSTALL_HINT = "Parquet export needs pyarrow: pip install 'roller[export]'"


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    return pyarrow


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _message_type(pa: Any) -> Any:
    function = pa.struct([("name", pa.string()), ("arguments", pa.string())])
    call = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", function)])
    return pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("content_parts", pa.string()),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
            ("reasoning_content", pa.string()),
        ]
    )


def _tool_call_row(call: Any) -> dict[str, Any]:
    """A chat tool call; a custom tool's `input` is carried as its arguments."""
    body = call.get("function") or call.get("custom") or {}
    arguments = body.get("arguments", body.get("input"))
    return {
        "id": call.get("id"),
        "type": call.get("type"),
        "function": {
            "name": body.get("name"),
            "arguments": arguments
            if isinstance(arguments, str) or arguments is None
            else _json(arguments),
        },
    }


def message_row(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    calls = message.get("tool_calls")
    return {
        "role": message.get("role"),
        "content": content if isinstance(content, str) else None,
        "content_parts": None if isinstance(content, str) or content is None else _json(content),
        "tool_calls": [_tool_call_row(c) for c in calls] if isinstance(calls, list) else None,
        "tool_call_id": message.get("tool_call_id"),
        "reasoning_content": message.get("reasoning_content"),
    }


def _usage(record: dict[str, Any], name: str) -> int | None:
    usage = record.get("usage") or {}
    value = usage.get(name)
    return value if isinstance(value, int) else None


def call_row(record: dict[str, Any], texts: ToolsJson | None = None) -> dict[str, Any]:
    """One openai-messages record as a row of the calls table (`texts`: the JSON of
    recent calls' tools, `ToolsJson`)."""
    source = record["source"]
    participant = record.get("participant") or {}
    flow = record.get("continuity") or {}
    return {
        "call_id": record["call_id"],
        "sequence": record["sequence"],
        "sample_id": source["sample_id"],
        "attempt": source["attempt"],
        "capture_scope": source["capture_scope"],
        "harness": source["harness"],
        "harness_version": source["harness_version"],
        "participant_id": participant.get("participant_id"),
        "participant_role": participant.get("role"),
        "parent_participant_id": participant.get("parent_participant_id"),
        "depth": participant.get("depth"),
        "participant_name": participant.get("name"),
        "protocol": record["protocol"],
        "model": record["model"],
        "response_model": record["response_model"],
        "response_id": record["response_id"],
        "messages": [message_row(m) for m in record["messages"]],
        "reply": [message_row(m) for m in record["reply"]] if record["reply"] is not None else None,
        "tools_json": _json(record["tools"]) if texts is None else texts.of(record["tools"]),
        "params_json": _json(record["params"]),
        "origin_json": _json(record["origin"]),
        "input_tokens": _usage(record, "input_tokens"),
        "output_tokens": _usage(record, "output_tokens"),
        "cache_read_tokens": _usage(record, "cache_read_tokens"),
        "cache_write_tokens": _usage(record, "cache_write_tokens"),
        "finish_reason": record["finish_reason"],
        "previous_call_id": flow.get("previous_call_id"),
        "extends_previous": flow.get("extends_previous"),
        "extends_call_id": flow.get("extends_call_id"),
        "break_reason": flow.get("break_reason"),
        "export_status": record["export_status"],
        "export_blocked_by": record["export_blocked_by"],
        "problems": record["problems"],
        "left_out": record["left_out"],
    }


def _calls_schema(pa: Any) -> Any:
    message = pa.list_(_message_type(pa))
    strings = pa.list_(pa.string())
    types = {
        "sequence": pa.int64(),
        "attempt": pa.int64(),
        "depth": pa.int64(),
        "messages": message,
        "reply": message,
        "input_tokens": pa.int64(),
        "output_tokens": pa.int64(),
        "cache_read_tokens": pa.int64(),
        "cache_write_tokens": pa.int64(),
        "extends_previous": pa.bool_(),
        "export_blocked_by": strings,
        "problems": strings,
        "left_out": strings,
    }
    names = list(call_row(_EMPTY_RECORD))
    return pa.schema([(n, types.get(n, pa.string())) for n in names])


_EMPTY_RECORD: dict[str, Any] = {
    "call_id": "",
    "sequence": 0,
    "source": {
        "sample_id": "",
        "attempt": 0,
        "capture_scope": "",
        "harness": "",
        "harness_version": None,
    },
    "protocol": None,
    "model": None,
    "response_model": None,
    "response_id": None,
    "messages": [],
    "reply": None,
    "tools": [],
    "params": {},
    "origin": {},
    "finish_reason": None,
    "export_status": "",
    "export_blocked_by": [],
    "problems": [],
    "left_out": [],
}


def write_calls(records: Iterable[dict[str, Any]], out: Path) -> int:
    """Write the calls table; returns the row count."""
    pa = _pyarrow()
    texts = ToolsJson()
    return write_rows(pa, (call_row(r, texts) for r in records), _calls_schema(pa), out)


class ToolsJson:
    """`_json(tools)` of a few recent calls' tool lists, kept by their tools' objects: a
    conversation's calls resend one, which `ItemViews.tools` gives as the very same
    tool objects (openai-messages' records), so its JSON text (16 KiB in
    `finalize_scale.py`'s shape, most of the table's JSON) is made once per conversation
    instead of once per call. Tools that are the same objects as a kept list's, held
    with its text, write the same text."""

    def __init__(self, keep: int = 8) -> None:
        self._recent: deque[tuple[list[Any], str | None]] = deque(maxlen=keep)

    def of(self, tools: Any) -> str | None:
        if not isinstance(tools, list):
            return _json(tools)
        for kept, text in self._recent:
            if len(kept) == len(tools) and all(map(is_, kept, tools)):
                return text
        text = _json(tools)
        self._recent.appendleft((list(tools), text))
        return text


# Rows become an Arrow batch this many at a time, and batches a row group once they
# hold this many bytes: an export holds a few calls' Python rows and one row group's
# Arrow data, whatever the number of calls (a row holds a call's whole conversation:
# the table of a 10k-call capture made at once peaked at 3.9 GB).
BATCH_ROWS = 32
GROUP_BYTES = 64 << 20


def write_rows(pa: Any, rows: Iterable[dict[str, Any]], schema: Any, out: Path) -> int:
    """`rows` as a Parquet file of `schema`, streamed (above); returns the row count."""
    count = 0
    pending: list[Any] = []
    size = 0
    with pa.parquet.ParquetWriter(out, schema) as writer:
        for batch in _batches(pa, rows, schema):
            pending.append(batch)
            size += batch.nbytes
            count += batch.num_rows
            if size >= GROUP_BYTES:
                writer.write_table(pa.Table.from_batches(pending, schema))
                pending, size = [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending, schema))
    return count


def _batches(pa: Any, rows: Iterable[dict[str, Any]], schema: Any) -> Iterator[Any]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == BATCH_ROWS:
            yield pa.RecordBatch.from_pylist(chunk, schema=schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=schema)


def segment_rows(record: TrajectoryRecord) -> list[dict[str, Any]]:
    """One row per segment of a built trajectory."""
    rows = []
    for segment in record.segments:
        codec = codec_named(segment.protocol)
        config = segment.configs[0] if segment.configs else {}
        items = [m.message for m in segment.messages]
        view = codec.chat.items(items, system=codec.system_prompt(config)) if codec else None
        tools = segment.tool_snapshots[0].tools if segment.tool_snapshots else None
        rows.append(
            {
                "sample_id": record.source.sample_id,
                "attempt": record.source.attempt,
                "capture_scope": record.source.capture_scope,
                "harness": record.source.harness.name,
                "root_participant_id": record.root_participant_id,
                "segment": segment.index,
                "protocol": segment.protocol,
                "model": segment.model,
                "start_reason": segment.start.reason,
                "start_detail": segment.start.detail,
                "call_ids": [r.call_id for r in segment.requests],
                "messages": [message_row(m) for m in view.plain()] if view else [],
                "tools_json": _json(list(codec.chat.tools(tools).tools) if codec else tools),
                "items_json": _json([m.model_dump(mode="json") for m in segment.messages]),
                "export_status": record.export_status,
                "export_blocked_by": list(record.export_blocked_by),
            }
        )
    return rows


def write_trajectories(records: Iterable[TrajectoryRecord], out: Path, omissions: Omissions) -> int:
    """Write the trajectories table (one row per segment); returns the row count."""
    pa = _pyarrow()

    def rows() -> Iterator[dict[str, Any]]:
        for record in records:
            if not record.built:
                omissions.leave_out("not_built:" + ",".join(record.export_blocked_by))
                continue
            yield from segment_rows(record)
            omissions.written += 1

    strings = pa.list_(pa.string())
    types = {
        "attempt": pa.int64(),
        "segment": pa.int64(),
        "call_ids": strings,
        "messages": pa.list_(_message_type(pa)),
        "export_blocked_by": strings,
    }
    names = [
        "sample_id", "attempt", "capture_scope", "harness", "root_participant_id", "segment",
        "protocol", "model", "start_reason", "start_detail", "call_ids", "messages",
        "tools_json", "items_json", "export_status", "export_blocked_by",
    ]  # fmt: skip
    schema = pa.schema([(n, types.get(n, pa.string())) for n in names])
    return write_rows(pa, rows(), schema, out)

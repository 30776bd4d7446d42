"""OpenAI Responses: reassembling a recorded response into one `response`.

A stream carries typed events (`response.created`, `response.output_item.added`,
`response.output_text.delta`, …) and ends with `response.completed`,
`response.incomplete` or `response.failed`, each carrying the whole `response` object.

- When a terminal event arrives, its `response` is the output, verbatim. If it has no
  `output` (some servers send it bare), the output items are the
  `response.output_item.done` items in index order, as the official SDK's
  `ResponseStreamState` recovers them (differential test:
  tests/wire/test_openai_responses_oracle.py); items that never finished are left out
  and `problems` says so.
- When the stream is cut, the output is the last lifecycle `response` (`created`,
  `queued`, `in_progress`) with `output` rebuilt as far as the stream got: per output
  index the `output_item.done` item if it arrived, else the `output_item.added` item with
  every delta merged (output text, refusal, function-call arguments, custom tool input,
  reasoning summary and reasoning text, annotations, content parts), `*.done` values
  overriding the concatenated deltas. Events that cannot be merged are kept verbatim in
  `Reassembly.unmerged` (only in this case: a terminal `response` already holds all).

`complete` is True for `response.completed` and `response.incomplete` (the model
stopped early, e.g. at `max_output_tokens`: a normal, whole response whose
`finish_reason` says why); `response.failed` and an `error` event set `error`.
"""

from __future__ import annotations

import copy
from typing import Any

from roller.wire.bodies import EventLog
from roller.wire.jsonvalues import (
    as_int,
    as_object,
    as_str,
    describe_error,
)
from roller.wire.types import (
    JSONObject,
    Parsed,
    Reassembly,
    SSEEvent,
)

__all__ = ["ResponsesAssembler", "whole_body"]

_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

# Delta events: event type -> (list field of the item or None for the item itself,
# index field of the event, text field in the target, value field of the event).
_DELTAS: dict[str, tuple[str | None, str | None, str]] = {
    "response.output_text.delta": ("content", "content_index", "text"),
    "response.refusal.delta": ("content", "content_index", "refusal"),
    "response.reasoning_text.delta": ("content", "content_index", "text"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index", "text"),
    "response.function_call_arguments.delta": (None, None, "arguments"),
    "response.custom_tool_call_input.delta": (None, None, "input"),
    "response.mcp_call_arguments.delta": (None, None, "arguments"),
    "response.code_interpreter_call_code.delta": (None, None, "code"),
}
# `*.done` events whose value replaces the concatenated deltas: type -> (list, index, field
# in target, field in event).
_DONES: dict[str, tuple[str | None, str | None, str, str]] = {
    "response.output_text.done": ("content", "content_index", "text", "text"),
    "response.refusal.done": ("content", "content_index", "refusal", "refusal"),
    "response.reasoning_text.done": ("content", "content_index", "text", "text"),
    "response.reasoning_summary_text.done": ("summary", "summary_index", "text", "text"),
    "response.function_call_arguments.done": (None, None, "arguments", "arguments"),
    "response.custom_tool_call_input.done": (None, None, "input", "input"),
    "response.mcp_call_arguments.done": (None, None, "arguments", "arguments"),
    "response.code_interpreter_call_code.done": (None, None, "code", "code"),
}
# Part events: type -> (list field of the item, index field of the event).
_PARTS: dict[str, tuple[str, str]] = {
    "response.content_part.added": ("content", "content_index"),
    "response.content_part.done": ("content", "content_index"),
    "response.reasoning_summary_part.added": ("summary", "summary_index"),
    "response.reasoning_summary_part.done": ("summary", "summary_index"),
}


class ResponsesAssembler:
    """Incremental reassembly of one Responses stream into a `response` object."""

    def __init__(self) -> None:
        self._log = EventLog()
        self._response: JSONObject | None = None
        self._final: JSONObject | None = None
        self._final_kind: str | None = None
        self._added: dict[int, JSONObject] = {}
        self._done: dict[int, JSONObject] = {}
        self._error: JSONObject | None = None
        self._pending_unmerged: list[tuple[SSEEvent, Any, str]] = []

    def feed(self, event: SSEEvent, parsed: Parsed | None = None) -> None:
        obj = self._log.decode_object(event, parsed)
        if obj is None:
            return
        kind = as_str(obj.get("type")) or event.event or ""
        try:
            self._apply(kind, obj, event)
        except RecursionError:
            self._log.keep(event, obj, "nested too deeply to merge")

    def _defer(self, event: SSEEvent, obj: JSONObject, why: str) -> None:
        # Kept only if no terminal response makes it redundant (see finish()).
        self._pending_unmerged.append((event, obj, why))

    def _apply(self, kind: str, obj: JSONObject, event: SSEEvent) -> None:
        if kind == "error":
            self._error = obj
            return
        if self._final is not None:
            self._log.keep(event, obj, f"{kind} after {self._final_kind}")
            return
        if kind in _LIFECYCLE or kind in _TERMINAL:
            response = as_object(obj.get("response"))
            if response is None:
                self._log.keep(event, obj, f"{kind} without a response object")
            elif kind in _TERMINAL:
                self._final = copy.deepcopy(response)
                self._final_kind = kind
            else:
                self._response = copy.deepcopy(response)
            return
        index = as_int(obj.get("output_index"))
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = as_object(obj.get("item"))
            if index is None or item is None:
                self._defer(event, obj, f"{kind} without output_index or item")
            elif kind == "response.output_item.done":
                self._done[index] = copy.deepcopy(item)
            elif index in self._added:
                self._defer(event, obj, f"second output_item.added at index {index}")
            else:
                self._added[index] = copy.deepcopy(item)
            return
        target = self._added.get(index) if index is not None else None
        if target is None:
            self._defer(event, obj, f"{kind} for output index {index}, never added")
        elif not self._merge_into(kind, obj, target):
            self._defer(event, obj, f"{kind} has no place in the reassembled output")

    def _merge_into(self, kind: str, obj: JSONObject, item: JSONObject) -> bool:
        if kind in _DELTAS:
            list_field, index_field, field = _DELTAS[kind]
            delta = obj.get("delta")
            target = _target(item, list_field, index_field, obj)
            if target is None or not isinstance(delta, str):
                return False
            target[field] = (as_str(target.get(field)) or "") + delta
            logprobs = obj.get("logprobs")
            if kind == "response.output_text.delta" and isinstance(logprobs, list) and logprobs:
                existing = target.get("logprobs")
                if isinstance(existing, list):
                    existing.extend(copy.deepcopy(logprobs))
                else:
                    target["logprobs"] = copy.deepcopy(logprobs)
            return True
        if kind in _DONES:
            list_field, index_field, field, source = _DONES[kind]
            target = _target(item, list_field, index_field, obj)
            if target is None or source not in obj:
                return False
            target[field] = copy.deepcopy(obj[source])
            return True
        if kind in _PARTS:
            list_field, index_field = _PARTS[kind]
            part = as_object(obj.get("part"))
            position = as_int(obj.get(index_field))
            if part is None or position is None or position < 0:
                return False
            parts = item.get(list_field)
            if not isinstance(parts, list):
                parts = item[list_field] = []
            if position < len(parts):
                if kind.endswith(".done"):
                    parts[position] = copy.deepcopy(part)
                # a repeated `.added` for a part already there changes nothing
            else:
                parts.append(copy.deepcopy(part))
            return True
        if kind == "response.output_text.annotation.added":
            target = _target(item, "content", "content_index", obj)
            if target is None or "annotation" not in obj:
                return False
            annotations = target.get("annotations")
            if not isinstance(annotations, list):
                annotations = target["annotations"] = []
            annotations.append(copy.deepcopy(obj["annotation"]))
            return True
        return False

    def finish(self) -> Reassembly:
        log = self._log
        indexes = sorted(self._added.keys() | self._done.keys())
        items = [self._done[i] if i in self._done else self._added[i] for i in indexes]
        if self._final is not None:
            output = self._final
            if output.get("output") is None:
                output["output"] = [self._done[i] for i in sorted(self._done)]
                if len(self._done) < len(indexes):
                    log.note(f"{self._final_kind} had no output; items not done were left out")
                else:
                    log.note(f"{self._final_kind} had no output; recovered from output_item.done")
            return self._terminal(output)
        for event, obj, why in self._pending_unmerged:
            log.keep(event, obj, why)
        if self._response is None:
            if self._error is not None:
                reason = f"error event: {describe_error(self._error)}"
                return log.result(None, complete=False, reason=reason, error=self._error)
            if not items:
                reason = "no SSE events" if log.events == 0 else "no response.created"
                return log.result(None, complete=False, reason=reason)
            partial: JSONObject = {"output": items}
            log.note("no response.created: top-level fields are missing")
        else:
            partial = self._response
            partial["output"] = items
        if self._error is not None:
            reason = f"error event: {describe_error(self._error)}"
        else:
            open_items = [i for i in indexes if i not in self._done]
            reason = "stream ended before response.completed"
            if open_items:
                reason += f" (inside output item {open_items[-1]})"
        return log.result(partial, complete=False, reason=reason, error=self._error)

    def _terminal(self, output: JSONObject) -> Reassembly:
        log = self._log
        if self._error is not None:
            reason = f"error event: {describe_error(self._error)}"
            return log.result(output, complete=False, reason=reason, error=self._error)
        if self._final_kind == "response.failed":
            error = as_object(output.get("error"))
            reason = f"response.failed: {describe_error(error) if error else 'no error object'}"
            return log.result(output, complete=False, reason=reason, error=error)
        return log.result(output, complete=True, reason=None)


def _target(
    item: JSONObject, list_field: str | None, index_field: str | None, obj: JSONObject
) -> JSONObject | None:
    if list_field is None or index_field is None:
        return item
    position = as_int(obj.get(index_field))
    parts = item.get(list_field)
    if position is None or not isinstance(parts, list) or not 0 <= position < len(parts):
        return None
    part = parts[position]
    return part if isinstance(part, dict) else None


def whole_body(value: Any) -> Reassembly:
    obj = as_object(value)
    if obj is None:
        return Reassembly(None, False, f"body is JSON but not an object ({type(value).__name__})")
    status = obj.get("status")
    error = as_object(obj.get("error"))
    if "output" not in obj and error is not None:
        return Reassembly(None, False, f"error body: {describe_error(error)}", error=error)
    if status == "failed" or error is not None:
        what = describe_error(error) if error else "no error object"
        return Reassembly(obj, False, f"response status failed: {what}", error=error)
    if status in ("queued", "in_progress"):
        return Reassembly(obj, False, f"response status {status} (background response)")
    return Reassembly(obj, True)

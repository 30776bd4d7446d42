"""OpenAI Chat Completions: reassembling a recorded response into one `chat.completion`.

A stream is `data: <chat.completion.chunk>` events ending with `data: [DONE]`. Chunks
merge into one `chat.completion` as the official SDK's `ChatCompletionStreamState` does
(the differential test is tests/wire/test_openai_chat_oracle.py), with these rules:

- the first chunk gives the top-level fields (`object` becomes `chat.completion`; the
  per-chunk padding `obfuscation` is dropped); a later chunk fills a field that is still
  missing, null or "" (Azure's first chunk has empty ids), and its `usage` and
  `system_fingerprint` replace earlier ones when not null (the usage chunk comes last);
- choices merge by `index`; `delta` merges into `message`: strings concatenate
  (`content`, `refusal`, and unknown ones such as `reasoning_content`), objects merge,
  lists of `{index: …}` entries merge by index (`tool_calls`), other lists extend;
  `role` and `type` are set, never concatenated, and a fragment that repeats a tool
  call's `id` or `function.name` exactly is a repetition (some compatible servers resend
  them on every fragment), not text to append; a null never erases a value;
- `finish_reason` is set by the chunk that carries one; `logprobs.content` and
  `logprobs.refusal` lists extend; tool calls keep their `index`, as the SDK keeps it.

Complete means `[DONE]` arrived, or (servers that omit `[DONE]`) every choice has a
`finish_reason`. An `{"error": …}` event ends the stream as an error.
"""

from __future__ import annotations

import copy
from typing import Any

from roller.wire.bodies import EventLog, error_object
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    describe_error,
)
from roller.wire.types import (
    JSONObject,
    Parsed,
    Reassembly,
    SSEEvent,
)

__all__ = ["ChatAssembler", "whole_body"]

# Keys whose value names a thing rather than streams text: set, never concatenated.
_SET_KEYS = frozenset({"role", "type", "index"})
# Keys streamed once by OpenAI but resent whole on every fragment by some servers.
_IDENTITY_KEYS = frozenset({"id", "name"})
_CHOICE_MERGED = frozenset({"index", "delta", "finish_reason", "logprobs"})


def merge_delta(acc: JSONObject, delta: JSONObject) -> JSONObject:
    """Fold a Chat delta (or a nested part of one) into `acc`, in place; returns `acc`."""
    for key, value in delta.items():
        if value is None:
            acc.setdefault(key, None)
            continue
        current = acc.get(key)
        if current is None:
            if _indexed(value):
                acc[key] = merge_indexed([], value)
            else:
                acc[key] = copy.deepcopy(value)
        elif key in _SET_KEYS:
            acc[key] = copy.deepcopy(value)
        elif isinstance(current, str) and isinstance(value, str):
            if not (key in _IDENTITY_KEYS and value == current):
                acc[key] = current + value
        elif isinstance(current, dict) and isinstance(value, dict):
            merge_delta(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            if _indexed(value):
                merge_indexed(current, value)
            else:
                current.extend(copy.deepcopy(value))
        else:
            acc[key] = copy.deepcopy(value)
    return acc


def _indexed(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(e, dict) and as_int(e.get("index")) is not None for e in value)
    )


def merge_indexed(acc: list[Any], entries: list[Any]) -> list[Any]:
    """Merge `{index: n, …}` fragments into `acc`, kept sorted by index."""
    for entry in entries:
        index = entry["index"]
        found = next(
            (e for e in acc if isinstance(e, dict) and e.get("index") == index),
            None,
        )
        if found is None:
            acc.append(merge_delta({}, entry))
            acc.sort(key=lambda e: e["index"] if isinstance(e, dict) else 0)
        else:
            merge_delta(found, entry)
    return acc


class ChatAssembler:
    """Incremental reassembly of one Chat Completions stream into a `chat.completion`."""

    def __init__(self) -> None:
        self._log = EventLog()
        self._completion: JSONObject | None = None
        self._choices: dict[int, JSONObject] = {}
        self._done = False
        self._error: JSONObject | None = None

    def feed(self, event: SSEEvent, parsed: Parsed | None = None) -> None:
        if event.data.strip() == "[DONE]":
            self._log.events += 1
            if self._done:
                self._log.note("second [DONE]")
            self._done = True
            return
        chunk = self._log.decode_object(event, parsed)
        if chunk is None:
            return
        if "error" in chunk and "choices" not in chunk:
            self._error = error_object(chunk) or chunk
            return
        if self._done:
            self._log.keep(event, chunk, "chunk after [DONE]")
            return
        try:
            self._merge_chunk(chunk, event)
        except RecursionError:
            self._log.keep(event, chunk, "nested too deeply to merge")

    def _merge_chunk(self, chunk: JSONObject, event: SSEEvent) -> None:
        if self._completion is None:
            self._completion = {}
        top = self._completion
        for key, value in chunk.items():
            if key in ("choices", "obfuscation", "object"):
                continue
            if key in ("usage", "system_fingerprint"):
                if value is not None or key not in top:
                    top[key] = copy.deepcopy(value)
            elif key not in top or (top[key] in (None, "") and value not in (None, "")):
                top[key] = copy.deepcopy(value)
        top["object"] = "chat.completion"
        choices = chunk.get("choices")
        if choices is not None and not isinstance(choices, list):
            self._log.keep(event, chunk, "choices is not a list")
            return
        for choice in as_list(choices):
            index = as_int(choice.get("index")) if isinstance(choice, dict) else None
            if index is None:
                self._log.keep(event, {"choice": choice}, "choice without an integer index")
                continue
            self._merge_choice(index, choice)

    def _merge_choice(self, index: int, choice: JSONObject) -> None:
        snapshot = self._choices.get(index)
        if snapshot is None:
            snapshot = {k: copy.deepcopy(v) for k, v in choice.items() if k != "delta"}
            snapshot["message"] = {}
            self._choices[index] = snapshot
            first = True
        else:
            first = False
            for key, value in choice.items():
                if key not in _CHOICE_MERGED and snapshot.get(key) is None:
                    snapshot[key] = copy.deepcopy(value)
        delta = as_object(choice.get("delta"))
        if delta is not None:
            message = as_object(snapshot.get("message"))
            if message is None:
                message = snapshot["message"] = {}
            merge_delta(message, delta)
        if choice.get("finish_reason"):
            snapshot["finish_reason"] = choice["finish_reason"]
        logprobs = as_object(choice.get("logprobs"))
        if logprobs is not None and not first:
            _merge_logprobs(snapshot, logprobs)

    def finish(self) -> Reassembly:
        log = self._log
        if self._completion is None:
            reason: str | None
            if self._error is not None:
                reason = f"error event: {describe_error(self._error)}"
            elif self._done:
                reason = "[DONE] without any chunk"
            elif log.events == 0:
                reason = "no SSE events"
            else:
                reason = "no chat.completion.chunk in the stream"
            return log.result(None, complete=False, reason=reason, error=self._error)
        output = self._completion
        output["choices"] = [self._choices[i] for i in sorted(self._choices)]
        unfinished = [i for i in sorted(self._choices) if not self._choices[i].get("finish_reason")]
        if self._error is not None:
            reason = f"error event: {describe_error(self._error)}"
        elif self._done:
            reason = None
        elif not self._choices:
            reason = "no [DONE] and no choices"
        elif len(unfinished) == len(self._choices):
            reason = "no [DONE] and no finish_reason"
        elif unfinished:
            reason = f"no [DONE] and no finish_reason for choices {unfinished}"
        else:
            reason = None
            log.note("stream ended without [DONE] after every choice finished")
        return log.result(output, complete=reason is None, reason=reason, error=self._error)


def _merge_logprobs(snapshot: JSONObject, logprobs: JSONObject) -> None:
    current = as_object(snapshot.get("logprobs"))
    if current is None:
        snapshot["logprobs"] = copy.deepcopy(logprobs)
        return
    for key, value in logprobs.items():
        if isinstance(value, list):
            existing = current.get(key)
            if isinstance(existing, list):
                existing.extend(copy.deepcopy(value))
            elif value:
                current[key] = copy.deepcopy(value)
        elif current.get(key) is None and value is not None:
            current[key] = copy.deepcopy(value)


def whole_body(value: Any) -> Reassembly:
    obj = as_object(value)
    if obj is None:
        return Reassembly(None, False, f"body is JSON but not an object ({type(value).__name__})")
    if "error" in obj and "choices" not in obj:
        error = error_object(obj)
        return Reassembly(None, False, f"error body: {describe_error(error)}", error=error)
    return Reassembly(obj, True)

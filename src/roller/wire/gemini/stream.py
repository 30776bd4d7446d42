"""Gemini: reassembling a recorded response into one `GenerateContentResponse`.

Each SSE event (or each element of the JSON array `streamGenerateContent` returns
without `alt=sse`) is a whole `GenerateContentResponse` chunk. Chunks merge into one
response:

- top-level fields (`usageMetadata`, `modelVersion`, `responseId`, `promptFeedback`, …):
  the last non-null value wins;
- candidates merge by `index` (position when absent); their parts append in order, and
  a pure text part (`text`, optional `thought`) joins the text part before it when both
  are thoughts or both are not. A part with anything else (a `thoughtSignature`,
  `functionCall`, `inlineData`, …) starts a new part, so a signature stays on the part
  it came with; `functionCall` parts are kept whole and in order;
- `citationMetadata.citationSources` lists extend; other candidate fields (`finishReason`,
  `safetyRatings`, `groundingMetadata`, …) last non-null wins.

Complete means every candidate has a `finishReason`, or the prompt was blocked
(`promptFeedback.blockReason`). An `{"error": …}` chunk is an error. There is no
official Python accumulator to test against here; tests/wire/test_gemini.py checks
properties instead (text is the concatenation of the deltas, calls keep their order).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from roller.wire.bodies import EventLog, error_object
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    describe_error,
    get_path,
)
from roller.wire.types import (
    JSONObject,
    Parsed,
    Reassembly,
    SSEEvent,
)

if TYPE_CHECKING:
    pass

__all__ = ["GeminiAssembler", "whole_body"]

_PLAIN_TEXT_KEYS = frozenset({"text", "thought"})


def _joins(previous: Any, part: JSONObject) -> bool:
    if not isinstance(previous, dict):
        return False
    if not isinstance(part.get("text"), str) or not isinstance(previous.get("text"), str):
        return False
    if not part.keys() <= _PLAIN_TEXT_KEYS:
        return False
    if not previous.keys() <= _PLAIN_TEXT_KEYS | {"thoughtSignature"}:
        return False
    return bool(previous.get("thought")) == bool(part.get("thought"))


class _Merger:
    """Folds GenerateContentResponse chunks into one response."""

    def __init__(self) -> None:
        self.top: JSONObject | None = None
        self.candidates: dict[int, JSONObject] = {}

    def merge(self, chunk: JSONObject) -> None:
        if self.top is None:
            self.top = {}
        for key, value in chunk.items():
            if key != "candidates" and (value is not None or key not in self.top):
                self.top[key] = copy.deepcopy(value)
        for position, candidate in enumerate(as_list(chunk.get("candidates"))):
            if isinstance(candidate, dict):
                index = as_int(candidate.get("index"))
                self._merge_candidate(position if index is None else index, candidate)

    def _merge_candidate(self, index: int, candidate: JSONObject) -> None:
        snapshot = self.candidates.setdefault(index, {})
        for key, value in candidate.items():
            if key == "content":
                self._merge_content(snapshot, value)
            elif key == "citationMetadata" and isinstance(value, dict):
                merged = as_object(snapshot.get(key))
                if merged is None:
                    snapshot[key] = copy.deepcopy(value)
                    continue
                for field, entries in value.items():
                    existing = merged.get(field)
                    if isinstance(existing, list) and isinstance(entries, list):
                        existing.extend(copy.deepcopy(entries))
                    elif entries is not None:
                        merged[field] = copy.deepcopy(entries)
            elif value is not None or key not in snapshot:
                snapshot[key] = copy.deepcopy(value)

    @staticmethod
    def _merge_content(snapshot: JSONObject, content: Any) -> None:
        if not isinstance(content, dict):
            if content is not None or "content" not in snapshot:
                snapshot["content"] = copy.deepcopy(content)
            return
        merged = as_object(snapshot.get("content"))
        if merged is None:
            merged = snapshot["content"] = {}
        for key, value in content.items():
            if key != "parts" and (value is not None or key not in merged):
                merged[key] = copy.deepcopy(value)
        parts = merged.get("parts")
        if not isinstance(parts, list):
            parts = merged["parts"] = []
        for part in as_list(content.get("parts")):
            if isinstance(part, dict) and parts and _joins(parts[-1], part):
                parts[-1]["text"] += part["text"]
            else:
                parts.append(copy.deepcopy(part))

    def output(self) -> JSONObject | None:
        if self.top is None:
            return None
        output = self.top
        if self.candidates or "candidates" in output:
            output["candidates"] = [self.candidates[i] for i in sorted(self.candidates)]
        return output

    def unfinished(self) -> list[int]:
        return [i for i in sorted(self.candidates) if not self.candidates[i].get("finishReason")]

    def blocked(self) -> bool:
        return self.top is not None and bool(get_path(self.top, "promptFeedback", "blockReason"))


def _verdict(merger: _Merger, error: JSONObject | None) -> str | None:
    """Why the merged response is not complete, or None when it is."""
    if error is not None:
        return f"error chunk: {describe_error(error)}"
    if merger.blocked():
        return None
    if not merger.candidates:
        return "no candidate in the stream"
    unfinished = merger.unfinished()
    if len(unfinished) == len(merger.candidates):
        return "stream ended before any candidate had a finishReason"
    if unfinished:
        return f"stream ended before candidates {unfinished} had a finishReason"
    return None


class GeminiAssembler:
    """Incremental reassembly of one `streamGenerateContent?alt=sse` stream."""

    def __init__(self) -> None:
        self._log = EventLog()
        self._merger = _Merger()
        self._error: JSONObject | None = None

    def feed(self, event: SSEEvent, parsed: Parsed | None = None) -> None:
        chunk = self._log.decode_object(event, parsed)
        if chunk is None:
            return
        if "error" in chunk and "candidates" not in chunk:
            self._error = error_object(chunk) or chunk
        else:
            try:
                self._merger.merge(chunk)
            except RecursionError:
                self._log.keep(event, chunk, "nested too deeply to merge")

    def finish(self) -> Reassembly:
        output = self._merger.output()
        reason: str | None
        if output is None:
            if self._error is not None:
                reason = f"error chunk: {describe_error(self._error)}"
            else:
                reason = "no SSE events" if self._log.events == 0 else "no response chunk"
            return self._log.result(None, complete=False, reason=reason, error=self._error)
        reason = _verdict(self._merger, self._error)
        return self._log.result(output, complete=reason is None, reason=reason, error=self._error)


def whole_body(value: Any) -> Reassembly:
    if isinstance(value, list):
        merger = _Merger()
        error: JSONObject | None = None
        for chunk in value:
            obj = as_object(chunk)
            if obj is None:
                continue
            if "error" in obj and "candidates" not in obj:
                error = error_object(obj)
            else:
                merger.merge(obj)
        output = merger.output()
        if output is None:
            what = describe_error(error) if error is not None else "no response chunk"
            return Reassembly(None, False, f"JSON array body: {what}", error=error)
        reason = _verdict(merger, error)
        return Reassembly(output, reason is None, reason, error=error)
    obj = as_object(value)
    if obj is None:
        return Reassembly(None, False, f"body is JSON but not an object ({type(value).__name__})")
    if "error" in obj and "candidates" not in obj:
        error = error_object(obj)
        return Reassembly(None, False, f"error body: {describe_error(error)}", error=error)
    return Reassembly(obj, True)

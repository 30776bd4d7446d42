"""Anthropic Messages: reassembling a recorded response into one `message`.

Reassembly follows the event grammar `message_start`, then per block
`content_block_start` / `content_block_delta`* / `content_block_stop`, then
`message_delta`* and `message_stop`, with `ping` anywhere and `error` ending the stream.
It agrees with the official SDK's accumulator (`anthropic.lib.streaming`
`accumulate_event`; tests/wire/test_anthropic_oracle.py holds the differential test) and
keeps more:

- unknown fields of the message, of blocks and of `message_delta` are kept; unknown
  block types are kept verbatim; a `null` in a delta never erases a value already set;
- text, thinking, signature, citations, compaction and `input_json_delta` deltas merge
  as the SDK merges them. Tool input is the concatenated `partial_json` parsed as JSON
  at the end; input that does not parse stays the raw string and `problems` says why;
- `message_delta.usage` fields overwrite (they are cumulative) unless null, so the
  cache fields of `message_start` survive;
- anything that cannot be merged (unknown event or delta types, a delta for a block
  that never started or already stopped, a delta whose type does not fit its block,
  fields on `message_stop`) is kept verbatim in `Reassembly.unmerged`, never dropped.

Content blocks are placed by their `index`, not by arrival order.
"""

from __future__ import annotations

from typing import Any

from roller.wire.bodies import EventLog, error_object
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    as_str,
    describe_error,
    parse_json,
)
from roller.wire.types import (
    JSONObject,
    Parsed,
    Reassembly,
    SSEEvent,
)

__all__ = ["AnthropicAssembler", "whole_body"]


class _Block:
    """One content block being built, with the tool-input JSON gathered so far."""

    def __init__(self, index: int, block: JSONObject) -> None:
        self.index = index
        self.block = block
        self.json_parts: list[str] = []
        self.stopped = False

    @property
    def kind(self) -> str | None:
        return as_str(self.block.get("type"))

    def takes_input_json(self) -> bool:
        kind = self.kind or ""
        return kind.endswith("tool_use") or "input" in self.block

    def settle_input(self, log: EventLog) -> None:
        """Turn the gathered `partial_json` into `input` (once)."""
        if not self.json_parts:
            return
        raw = "".join(self.json_parts)
        self.json_parts = []
        if not raw.strip():
            return  # only empty fragments: the block's starting input stands (as in the SDK)
        value, err = parse_json(raw)
        if err is None:
            self.block["input"] = value
            return
        self.block["input"] = raw
        state = "" if self.stopped else ", block not finished"
        name = as_str(self.block.get("id")) or as_str(self.block.get("name")) or "?"
        log.note(
            f"content block {self.index} ({self.kind} {name}): input JSON does not parse"
            f" ({err}{state}); kept the raw string"
        )


class AnthropicAssembler:
    """Incremental reassembly of one Messages stream into a `message` object."""

    def __init__(self) -> None:
        self._log = EventLog()
        self._message: JSONObject | None = None
        self._blocks: dict[int, _Block] = {}
        self._stopped = False
        self._error: JSONObject | None = None

    def feed(self, event: SSEEvent, parsed: Parsed | None = None) -> None:
        obj = self._log.decode_object(event, parsed)
        if obj is None:
            return
        kind = as_str(obj.get("type")) or event.event or ""
        try:
            self._apply(kind, obj, event)
        except RecursionError:
            self._log.keep(event, obj, "nested too deeply to merge")

    def _apply(self, kind: str, obj: JSONObject, event: SSEEvent) -> None:
        if kind == "ping":
            return
        if kind == "error":
            self._error = error_object(obj) or obj
            return
        if self._stopped:
            self._log.keep(event, obj, f"{kind} after message_stop")
            return
        if kind == "message_start":
            self._start(obj, event)
            return
        if self._message is None:
            self._log.keep(event, obj, f"{kind} before message_start")
            return
        if kind == "content_block_start":
            self._block_start(obj, event)
        elif kind == "content_block_delta":
            self._block_delta(obj, event)
        elif kind == "content_block_stop":
            block = self._block_for(obj, event)
            if block is not None:
                block.stopped = True
                block.settle_input(self._log)
        elif kind == "message_delta":
            self._message_delta(self._message, obj)
        elif kind == "message_stop":
            self._stopped = True
            extra = {k: v for k, v in obj.items() if k != "type"}
            if extra:
                self._log.keep(event, obj, "message_stop fields have no place in a message")
        else:
            self._log.keep(event, obj, f"unknown event type {kind!r}")

    def _start(self, obj: JSONObject, event: SSEEvent) -> None:
        message = as_object(obj.get("message"))
        if self._message is not None or message is None:
            why = "second message_start" if self._message is not None else "no message object"
            self._log.keep(event, obj, why)
            return
        # The event's JSON was parsed for this feed alone and is not kept when merged:
        # the message is built in it, not in a copy (nor are the blocks below).
        self._message = message
        for index, block in enumerate(as_list(self._message.get("content"))):
            if isinstance(block, dict):
                self._blocks[index] = _Block(index, block)

    def _block_for(self, obj: JSONObject, event: SSEEvent) -> _Block | None:
        index = as_int(obj.get("index"))
        block = self._blocks.get(index) if index is not None else None
        if block is None:
            self._log.keep(event, obj, f"no content block started at index {index}")
        return block

    def _block_start(self, obj: JSONObject, event: SSEEvent) -> None:
        index = as_int(obj.get("index"))
        block = as_object(obj.get("content_block"))
        if index is None or block is None:
            self._log.keep(event, obj, "content_block_start without index or content_block")
        elif index in self._blocks:
            self._log.keep(event, obj, f"second content_block_start at index {index}")
        else:
            self._blocks[index] = _Block(index, block)

    def _block_delta(self, obj: JSONObject, event: SSEEvent) -> None:
        block = self._block_for(obj, event)
        if block is None:
            return
        if block.stopped:
            self._log.keep(event, obj, f"delta for content block {block.index} after its stop")
            return
        delta = as_object(obj.get("delta"))
        if delta is None or not _merge_delta(block, delta):
            kind = as_str(delta.get("type")) if delta is not None else None
            self._log.keep(
                event, obj, f"{kind or 'untyped'} delta does not fit a {block.kind} block"
            )

    @staticmethod
    def _message_delta(message: JSONObject, obj: JSONObject) -> None:
        for key, value in (as_object(obj.get("delta")) or {}).items():
            if value is not None or message.get(key) is None:
                message[key] = value
        usage_delta = as_object(obj.get("usage"))
        if usage_delta is not None:
            usage = as_object(message.get("usage"))
            if usage is None:
                usage = message["usage"] = {}
            # Counts on message_delta are cumulative; a null or absent one keeps the
            # message_start value (cache fields usually only come there).
            usage.update({k: v for k, v in usage_delta.items() if v is not None})
        for key, value in obj.items():
            if key not in ("type", "delta", "usage") and value is not None:
                message[key] = value

    def finish(self) -> Reassembly:
        log = self._log
        error = self._error
        reason: str | None
        if self._message is None:
            if error is not None:
                reason = f"error event: {describe_error(error)}"
            elif log.events == 0:
                reason = "no SSE events"
            else:
                reason = "stream ended before message_start"
            return log.result(None, complete=False, reason=reason, error=error)
        open_blocks: list[int] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            block.settle_input(log)
            if not block.stopped:
                open_blocks.append(index)
        output = self._message
        output["content"] = [self._blocks[i].block for i in sorted(self._blocks)]
        if error is not None:
            reason = f"error event: {describe_error(error)}"
        elif not self._stopped:
            reason = "stream ended before message_stop"
            if open_blocks:
                reason += f" (inside content block {open_blocks[-1]})"
        else:
            reason = None
            if open_blocks:
                log.note(f"message_stop arrived with content blocks {open_blocks} not stopped")
        return log.result(output, complete=reason is None, reason=reason, error=error)


def _merge_delta(block: _Block, delta: JSONObject) -> bool:
    """Fold one content_block_delta into its block; False when it does not fit."""
    target = block.block
    kind = delta.get("type")
    if kind == "text_delta" and block.kind == "text" and isinstance(delta.get("text"), str):
        target["text"] = (as_str(target.get("text")) or "") + delta["text"]
    elif kind == "input_json_delta" and block.takes_input_json():
        partial = delta.get("partial_json")
        if not isinstance(partial, str):
            return False
        block.json_parts.append(partial)
    elif kind == "thinking_delta" and block.kind == "thinking":
        if not isinstance(delta.get("thinking"), str):
            return False
        target["thinking"] = (as_str(target.get("thinking")) or "") + delta["thinking"]
    elif kind == "signature_delta" and block.kind == "thinking":
        target["signature"] = delta.get("signature")
    elif kind == "citations_delta" and block.kind == "text" and "citation" in delta:
        citations = target.get("citations")
        if isinstance(citations, list):
            citations.append(delta["citation"])
        else:
            target["citations"] = [delta["citation"]]
    elif kind == "compaction_delta" and block.kind == "compaction":
        target.update({k: v for k, v in delta.items() if k != "type"})
    else:
        return False
    return True


def is_error_body(obj: JSONObject) -> bool:
    """Whether a whole (non-streamed) 2xx body's object is an error, not a message."""
    return obj.get("type") == "error" or ("error" in obj and "content" not in obj)


def whole_body(value: Any) -> Reassembly:
    obj = as_object(value)
    if obj is None:
        return Reassembly(None, False, f"body is JSON but not an object ({type(value).__name__})")
    if is_error_body(obj):
        error = error_object(obj)
        return Reassembly(None, False, f"error body: {describe_error(error)}", error=error)
    return Reassembly(obj, True)

"""Anthropic Messages (`POST /v1/messages`, with or without `?beta=true`) for the mock.

Rules kept here:
- Requests: `system` as a string or text blocks; `messages` may hold `role: "system"`
  entries (Claude Code puts environment info there) which are system text, never user
  text; a user message's `tool_result` blocks are tool entries, its text blocks user text.
  Structured output (`output_format` / `output_config.format` of type `json_schema`) is
  JSON mode.
- Responses: a text block (when there is text, or nothing else), then one `tool_use`
  block per call; `stop_reason` is `tool_use` when there are calls, else `end_turn`.
- Streams: `message_start`, `ping`, per block `content_block_start` / deltas
  (`text_delta`, or `input_json_delta` starting with an empty fragment as the real API
  does) / `content_block_stop`, then `message_delta` with the stop reason and the final
  usage, then `message_stop`. Each event has its `event:` line.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from roller.mock.dialects.base import (
    BadRequest,
    as_dict,
    as_list,
    as_str,
    required_str,
)
from roller.mock.ids import IdKind, IdMint
from roller.mock.reply import Reply, chunks, estimate_tokens
from roller.mock.request_view import ContextCall, Entry, OfferedTool, RequestView
from roller.mock.sse import json_event
from roller.wire.types import JSONObject, ProtocolName

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    500: "api_error",
}


class AnthropicDialect:
    name: ProtocolName = "anthropic-messages"
    request_id_header: tuple[str, IdKind] | None = ("request-id", "anthropic-request")
    token_count_field = "input_tokens"

    def read(self, body: JSONObject, *, path_model: str | None, path_stream: bool) -> RequestView:
        model = required_str(body, "model")
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise BadRequest("messages: an array is required")
        entries: list[Entry] = []
        for index, message in enumerate(messages):
            entries.extend(_entries(index, as_dict(message)))
        tools = tuple(
            OfferedTool(name=t["name"], schema=as_dict(t.get("input_schema")))
            for t in as_list(body.get("tools"))
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        )
        return RequestView(
            protocol=self.name,
            model=model,
            stream=body.get("stream") is True,
            entries=tuple(entries),
            tools=tools,
            system=_text(body.get("system")),
            json_schema=_json_schema(body),
        )

    def render(self, reply: Reply, view: RequestView, ids: IdMint) -> JSONObject:
        content: list[JSONObject] = []
        if reply.text or not reply.tool_calls:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": ids.mint("anthropic-tool-use"),
                    "name": call.name,
                    "input": call.arguments,
                }
            )
        return {
            "id": ids.mint("anthropic-message"),
            "type": "message",
            "role": "assistant",
            "model": view.model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": estimate_tokens(view.body_size),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": estimate_tokens(reply.output_chars),
                "service_tier": "standard",
            },
        }

    def render_stream(self, reply: Reply, view: RequestView, ids: IdMint) -> list[bytes]:
        message = self.render(reply, view, ids)
        usage = message["usage"]
        start = copy.deepcopy(message)
        start.update(content=[], stop_reason=None)
        start["usage"] = {**usage, "output_tokens": 1}
        events = [_event({"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            first: JSONObject
            deltas: list[JSONObject]
            if block["type"] == "text":
                first = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in chunks(block["text"])]
            else:
                first = {**block, "input": {}}
                arguments = _compact(block["input"])
                deltas = [{"type": "input_json_delta", "partial_json": ""}]
                deltas += [
                    {"type": "input_json_delta", "partial_json": p} for p in chunks(arguments)
                ]
            events.append(
                _event({"type": "content_block_start", "index": index, "content_block": first})
            )
            if index == 0:
                events.append(_event({"type": "ping"}))
            events.extend(
                _event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
            )
            events.append(_event({"type": "content_block_stop", "index": index}))
        events.append(
            _event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {k: v for k, v in usage.items() if k != "service_tier"},
                }
            )
        )
        events.append(_event({"type": "message_stop"}))
        return events

    def error_body(self, status: int, message: str) -> JSONObject:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


def _event(payload: JSONObject) -> bytes:
    return json_event(payload, event=payload["type"])


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(content: Any) -> str:
    """Text of a string or a list of content blocks (text blocks only)."""
    if isinstance(content, str):
        return content
    parts = [as_str(b.get("text")) for b in as_list(content) if isinstance(b, dict)]
    return "\n".join(p for p in parts if p)


def _entries(index: int, message: dict[str, Any]) -> list[Entry]:
    role = message.get("role")
    content = message.get("content")
    if role == "system":
        return [Entry("system", index, _text(content))]
    if role == "assistant":
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        calls = tuple(
            ContextCall(id=b.get("id"), name=as_str(b.get("name")), arguments=b.get("input"))
            for b in blocks
            if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
        )
        text = _text([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
        return [Entry("assistant", index, text, calls=calls)]
    if role != "user":
        return []
    if not isinstance(content, list):
        return [Entry("user", index, as_str(content))]
    entries: list[Entry] = []
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            text = _text(block.get("content"))
            entries.append(Entry("tool", index, text, result_of=block.get("tool_use_id")))
        elif block.get("type") == "text":
            texts.append(as_str(block.get("text")))
    if texts:
        entries.append(Entry("user", index, "\n".join(texts)))
    return entries


def _json_schema(body: JSONObject) -> JSONObject | None:
    for holder in (body.get("output_format"), as_dict(body.get("output_config")).get("format")):
        fmt = as_dict(holder)
        if fmt.get("type") == "json_schema":
            return as_dict(fmt.get("schema"))
    return None


DIALECT = AnthropicDialect()

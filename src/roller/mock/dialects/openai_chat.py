"""OpenAI Chat Completions (`POST …/chat/completions`) for the mock.

Rules kept here:
- Requests: `system`/`developer` messages are system text; `tool` (and legacy `function`)
  messages are tool results; assistant `tool_calls` are context calls with their
  arguments parsed. `response_format` `json_schema`/`json_object` is JSON mode.
- Responses: `content` is null when the reply is only tool calls; `finish_reason` is
  `tool_calls` or `stop`.
- Streams: a first chunk with the role, content chunks, then per tool call a chunk with
  `index`, `id`, `type` and `name` (arguments "") followed by argument fragments carrying
  only `index`; a chunk with the finish reason; when `stream_options.include_usage` is
  set, every chunk carries `usage: null` and a last chunk with empty `choices` carries the
  usage; finally `data: [DONE]`.
"""

from __future__ import annotations

import time
from typing import Any

from roller.mock.dialects.base import (
    BadRequest,
    as_dict,
    as_list,
    as_str,
    parse_arguments,
    required_str,
)
from roller.mock.ids import IdKind, IdMint
from roller.mock.reply import Reply, chunks, estimate_tokens
from roller.mock.request_view import ContextCall, Entry, OfferedTool, RequestView
from roller.mock.sse import encode_event, json_event
from roller.wire.types import JSONObject, ProtocolName

_ERROR_TYPES = {400: "invalid_request_error", 404: "invalid_request_error", 500: "server_error"}


class ChatDialect:
    name: ProtocolName = "openai-chat-completions"
    request_id_header: tuple[str, IdKind] | None = ("x-request-id", "openai-request")
    token_count_field = "input_tokens"

    def read(self, body: JSONObject, *, path_model: str | None, path_stream: bool) -> RequestView:
        model = required_str(body, "model")
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise BadRequest("messages: an array is required")
        entries = [
            entry
            for index, message in enumerate(messages)
            if (entry := _entry(index, as_dict(message))) is not None
        ]
        # `tools[].function`, and the legacy top-level `functions` list.
        declared = [as_dict(t).get("function") for t in as_list(body.get("tools"))]
        declared += as_list(body.get("functions"))
        tools = [
            OfferedTool(name=f["name"], schema=as_dict(f.get("parameters")))
            for f in declared
            if isinstance(f, dict) and isinstance(f.get("name"), str)
        ]
        return RequestView(
            protocol=self.name,
            model=model,
            stream=body.get("stream") is True,
            entries=tuple(entries),
            tools=tuple(tools),
            json_schema=_json_schema(body),
            include_usage=as_dict(body.get("stream_options")).get("include_usage") is True,
        )

    def render(self, reply: Reply, view: RequestView, ids: IdMint) -> JSONObject:
        message: JSONObject = {
            "role": "assistant",
            "content": reply.text if reply.text or not reply.tool_calls else None,
            "refusal": None,
            "annotations": [],
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": ids.mint("chat-tool-call"),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
                for call in reply.tool_calls
            ]
        prompt = estimate_tokens(view.body_size)
        completion = estimate_tokens(reply.output_chars)
        return {
            "id": ids.mint("chat-completion"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": view.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
            "system_fingerprint": None,
        }

    def render_stream(self, reply: Reply, view: RequestView, ids: IdMint) -> list[bytes]:
        full = self.render(reply, view, ids)
        choice = full["choices"][0]
        message = choice["message"]
        head = {k: full[k] for k in ("id", "object", "created", "model", "system_fingerprint")}
        head["object"] = "chat.completion.chunk"

        def chunk(delta: JSONObject, finish: str | None = None) -> bytes:
            body: JSONObject = {
                **head,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if view.include_usage:
                body["usage"] = None
            return json_event(body)

        events = [chunk({"role": "assistant", "content": "" if reply.text else None})]
        if reply.text:
            events.extend(chunk({"content": piece}) for piece in chunks(reply.text))
        for index, call in enumerate(message.get("tool_calls", [])):
            function = call["function"]
            opening = {"index": index, "id": call["id"], "type": "function"}
            opening["function"] = {"name": function["name"], "arguments": ""}
            events.append(chunk({"tool_calls": [opening]}))
            events.extend(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in chunks(function["arguments"])
            )
        events.append(chunk({}, choice["finish_reason"]))
        if view.include_usage:
            events.append(json_event({**head, "choices": [], "usage": full["usage"]}))
        events.append(encode_event("[DONE]"))
        return events

    def error_body(self, status: int, message: str) -> JSONObject:
        kind = _ERROR_TYPES.get(status, "invalid_request_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [as_str(p.get("text")) for p in as_list(content) if isinstance(p, dict)]
    return "\n".join(p for p in parts if p)


def _entry(index: int, message: dict[str, Any]) -> Entry | None:
    role = message.get("role")
    text = _text(message.get("content"))
    if role in ("system", "developer"):
        return Entry("system", index, text)
    if role == "user":
        return Entry("user", index, text)
    if role == "assistant":
        calls = []
        for raw in as_list(message.get("tool_calls")):
            function = as_dict(as_dict(raw).get("function"))
            calls.append(
                ContextCall(
                    id=as_dict(raw).get("id"),
                    name=as_str(function.get("name")),
                    arguments=parse_arguments(function.get("arguments")),
                )
            )
        return Entry("assistant", index, text, calls=tuple(calls))
    if role == "tool":
        return Entry("tool", index, text, result_of=message.get("tool_call_id"))
    if role == "function":
        return Entry("tool", index, text, tool_name=message.get("name"))
    return None


def _json_schema(body: JSONObject) -> JSONObject | None:
    fmt = as_dict(body.get("response_format"))
    if fmt.get("type") == "json_schema":
        return as_dict(as_dict(fmt.get("json_schema")).get("schema"))
    if fmt.get("type") == "json_object":
        return {}
    return None


DIALECT = ChatDialect()

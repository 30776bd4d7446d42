"""OpenAI Chat Completions: the `Codec` — response accessors, tool references, JSON mode.

Tool references: `choices[].message.tool_calls[]` (`id`, `function.name`) in the output;
the same on earlier assistant messages and `role: tool` messages (`tool_call_id`) in the
request. JSON mode is `response_format.type` `json_object` or `json_schema`. Reassembly
is `stream`, the conversation layout `history`,
its OpenAI chat form `chat`.
"""

from __future__ import annotations

from typing import Any

from roller.wire.bodies import BodyCodec
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    as_str,
    flatten_text,
    get_path,
    parse_arguments,
)
from roller.wire.openai_chat.chat import CHAT
from roller.wire.openai_chat.history import CONVERSATION
from roller.wire.openai_chat.stream import ChatAssembler, whole_body
from roller.wire.types import (
    JSONObject,
    ProtocolName,
    ToolCall,
    ToolResult,
    Usage,
)

_JSON_FORMATS = ("json_object", "json_schema")

__all__ = ["CODEC", "ChatCodec"]


def _choices(output: JSONObject | None) -> list[JSONObject]:
    choices = as_list(output.get("choices")) if output is not None else []
    return [c for c in choices if isinstance(c, dict)]


def _messages(request: JSONObject | None) -> list[tuple[int, JSONObject]]:
    messages = as_list(request.get("messages")) if request is not None else []
    return [(i, m) for i, m in enumerate(messages) if isinstance(m, dict)]


def _tool_calls(message: Any, index_of: int | None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for position, call in enumerate(as_list(get_path(message, "tool_calls"))):
        if not isinstance(call, dict):
            continue
        function = as_object(call.get("function")) or as_object(call.get("custom")) or {}
        raw = function.get("arguments", function.get("input"))
        arguments, _ = parse_arguments(raw)
        own_index = as_int(call.get("index"))
        calls.append(
            ToolCall(
                id=as_str(call.get("id")),
                name=as_str(function.get("name")),
                arguments=arguments,
                index=index_of
                if index_of is not None
                else (own_index if own_index is not None else position),
            )
        )
    return calls


class ChatCodec(BodyCodec):
    """The `Codec` for OpenAI Chat Completions."""

    name: ProtocolName = "openai-chat-completions"

    def __init__(self) -> None:
        super().__init__(ChatAssembler, whole_body, CONVERSATION, CHAT)

    def finish_reason(self, output: JSONObject | None) -> str | None:
        """The first choice's `finish_reason`."""
        return as_str(get_path(_choices(output), 0, "finish_reason"))

    def usage(self, output: JSONObject | None) -> Usage | None:
        """`prompt_tokens` includes cached tokens (`prompt_tokens_details.cached_tokens`)."""
        usage = as_object(output.get("usage")) if output is not None else None
        if usage is None:
            return None
        return Usage(
            input_tokens=as_int(usage.get("prompt_tokens")),
            output_tokens=as_int(usage.get("completion_tokens")),
            cache_read_tokens=as_int(get_path(usage, "prompt_tokens_details", "cached_tokens")),
            cache_write_tokens=as_int(
                get_path(usage, "prompt_tokens_details", "cache_write_tokens")
            ),
            total_tokens=as_int(usage.get("total_tokens")),
            raw=usage,
        )

    def output_tool_calls(self, output: JSONObject | None) -> list[ToolCall]:
        """Every choice's `message.tool_calls`, in choice order."""
        return [
            call for choice in _choices(output) for call in _tool_calls(choice.get("message"), None)
        ]

    def tool_call_marker_without_identity(self, output: JSONObject | None) -> bool:
        """A choice finished with `tool_calls` but none of its tool calls has both an id
        and a function name."""
        return any(
            choice.get("finish_reason") == "tool_calls"
            and not any(c.id and c.name for c in _tool_calls(choice.get("message"), None))
            for choice in _choices(output)
        )

    def context_tool_calls(self, request: JSONObject | None) -> list[ToolCall]:
        return [
            call
            for index, message in _messages(request)
            if message.get("role") == "assistant"
            for call in _tool_calls(message, index)
        ]

    def context_tool_results(self, request: JSONObject | None) -> list[ToolResult]:
        """`role: tool` messages (`tool_call_id`; content a string or a list of parts)."""
        return [
            ToolResult(
                id=as_str(message.get("tool_call_id")),
                name=as_str(message.get("name")),
                text=flatten_text(message.get("content")),
                message_index=index,
            )
            for index, message in _messages(request)
            if message.get("role") == "tool"
        ]

    def context_texts(self, request: JSONObject | None) -> list[str]:
        """Every message's string content and text parts, in order (any role)."""
        texts: list[str] = []
        for _, message in _messages(request):
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            for part in as_list(content):
                if isinstance(part, str):
                    texts.append(part)
                elif isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
        return texts

    def offered_tools(self, request: JSONObject | None) -> list[str]:
        """`tools[].function.name` (`custom.name` for custom tools), and the legacy
        `functions[].name`."""
        if request is None:
            return []
        names: list[str] = []
        for tool in as_list(request.get("tools")):
            name = as_str(get_path(tool, "function", "name")) or as_str(
                get_path(tool, "custom", "name")
            )
            if name is not None:
                names.append(name)
        for function in as_list(request.get("functions")):
            name = as_str(get_path(function, "name"))
            if name is not None:
                names.append(name)
        return names

    def json_mode(self, request: Any) -> bool:
        fmt = request.get("response_format") if isinstance(request, dict) else None
        return isinstance(fmt, dict) and fmt.get("type") in _JSON_FORMATS


CODEC = ChatCodec()

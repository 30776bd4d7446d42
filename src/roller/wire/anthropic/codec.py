"""Anthropic Messages: the `Codec` — response accessors, tool references, JSON mode.

Tool references: `tool_use` blocks (client tools) in the output; `tool_use` blocks of
earlier assistant turns and `tool_result` blocks (`tool_use_id`) in the request. JSON
mode is `output_format: {"type": "json_schema"}`. Reassembly is `stream`, the
conversation layout `history`, its OpenAI chat form `chat`.
"""

from __future__ import annotations

from typing import Any

from roller.wire.anthropic.chat import CHAT
from roller.wire.anthropic.history import CONVERSATION
from roller.wire.anthropic.stream import AnthropicAssembler, whole_body
from roller.wire.bodies import BodyCodec
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    as_str,
    flatten_text,
    get_path,
)
from roller.wire.types import (
    JSONObject,
    ProtocolName,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = ["CODEC", "AnthropicCodec"]


def _messages(request: JSONObject | None) -> list[tuple[int, JSONObject]]:
    messages = as_list(request.get("messages")) if request is not None else []
    return [(i, m) for i, m in enumerate(messages) if isinstance(m, dict)]


def _blocks(message: JSONObject) -> list[JSONObject]:
    return [b for b in as_list(message.get("content")) if isinstance(b, dict)]


class AnthropicCodec(BodyCodec):
    """The `Codec` for Anthropic Messages."""

    name: ProtocolName = "anthropic-messages"
    # one `tool_result` block of one message each (`context_tool_results`)
    results_by_message = True

    def __init__(self) -> None:
        super().__init__(AnthropicAssembler, whole_body, CONVERSATION, CHAT)

    def finish_reason(self, output: JSONObject | None) -> str | None:
        return as_str(output.get("stop_reason")) if output is not None else None

    def usage(self, output: JSONObject | None) -> Usage | None:
        """Anthropic counts: `input_tokens` excludes cache reads and writes, which are
        `cache_read_input_tokens` / `cache_creation_input_tokens`; no total is given."""
        usage = as_object(output.get("usage")) if output is not None else None
        if usage is None:
            return None
        return Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
            raw=usage,
        )

    def output_tool_calls(self, output: JSONObject | None) -> list[ToolCall]:
        """`tool_use` blocks (client tools). Server tools (`server_tool_use`,
        `mcp_tool_use`) run at the provider and are answered in the same response."""
        if output is None:
            return []
        return [
            ToolCall(
                id=as_str(block.get("id")),
                name=as_str(block.get("name")),
                arguments=block.get("input"),
                index=index,
            )
            for index, block in enumerate(as_list(output.get("content")))
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]

    def tool_call_marker_without_identity(self, output: JSONObject | None) -> bool:
        """`stop_reason: tool_use` with no `tool_use` block carrying both id and name."""
        if output is None or output.get("stop_reason") != "tool_use":
            return False
        return not any(c.id and c.name for c in self.output_tool_calls(output))

    def context_tool_calls(self, request: JSONObject | None) -> list[ToolCall]:
        return [
            ToolCall(
                id=as_str(block.get("id")),
                name=as_str(block.get("name")),
                arguments=block.get("input"),
                index=index,
            )
            for index, message in _messages(request)
            if message.get("role") == "assistant"
            for block in _blocks(message)
            if block.get("type") == "tool_use"
        ]

    def context_tool_results(self, request: JSONObject | None) -> list[ToolResult]:
        """`tool_result` blocks; their `content` is a string or a list of blocks."""
        results: list[ToolResult] = []
        # `_blocks` inlined: a context carries every earlier turn, so this loop runs over
        # the whole transcript on every call
        for index, message in _messages(request):
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                is_error = block.get("is_error")
                results.append(
                    ToolResult(
                        id=as_str(block.get("tool_use_id")),
                        name=None,
                        text=flatten_text(block.get("content")),
                        message_index=index,
                        is_error=is_error if isinstance(is_error, bool) else None,
                    )
                )
        return results

    def context_texts(self, request: JSONObject | None) -> list[str]:
        """`system` (string or text blocks), then every message's string content, text
        blocks and tool-result texts, in order; `role: system` messages included."""
        if request is None:
            return []
        texts: list[str] = []
        system = request.get("system")
        if isinstance(system, str):
            texts.append(system)
        else:
            texts.extend(t for b in as_list(system) if (t := _block_text(b)) is not None)
        for _, message in _messages(request):
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            texts.extend(t for b in as_list(content) if (t := _block_text(b)) is not None)
        return texts

    def offered_tools(self, request: JSONObject | None) -> list[str]:
        tools = as_list(request.get("tools")) if request is not None else []
        return [name for t in tools if (name := as_str(get_path(t, "name"))) is not None]

    def json_mode(self, request: Any) -> bool:
        fmt = request.get("output_format") if isinstance(request, dict) else None
        return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


def _block_text(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return None
    if block.get("type") == "tool_result":
        return flatten_text(block.get("content"))
    return as_str(block.get("text"))


CODEC = AnthropicCodec()

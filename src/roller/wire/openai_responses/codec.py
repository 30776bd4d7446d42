"""OpenAI Responses: the `Codec` — response accessors, tool references, JSON mode.

Tool references: a `function_call` item has a `call_id` and its own item `id` (`fc_…`);
both are kept (`ToolCall.id` / `ToolCall.item_id`), with Codex's `namespace`; results are
`function_call_output` input items. JSON mode is `text.format.type` `json_object` or
`json_schema`. Reassembly is `stream`, the conversation layout `history`,
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
from roller.wire.openai_responses.chat import CHAT
from roller.wire.openai_responses.history import CONVERSATION
from roller.wire.openai_responses.stream import ResponsesAssembler, whole_body
from roller.wire.openai_responses.tools import definitions
from roller.wire.types import (
    JSONObject,
    ProtocolName,
    ToolCall,
    ToolResult,
    Usage,
)

_JSON_FORMATS = ("json_object", "json_schema")

__all__ = ["CODEC", "ResponsesCodec"]


def _is_call(item: JSONObject) -> bool:
    # Client-executed tool calls carry a `call_id` that their `*_output` item answers.
    kind = as_str(item.get("type")) or ""
    return kind.endswith("_call") and "call_id" in item


def _tool_call(item: JSONObject, index: int) -> ToolCall:
    raw = item.get("arguments", item.get("input"))
    arguments, _ = parse_arguments(raw) if item.get("type") == "function_call" else (raw, None)
    return ToolCall(
        id=as_str(item.get("call_id")),
        name=as_str(item.get("name")),
        item_id=as_str(item.get("id")),
        namespace=as_str(item.get("namespace")),
        arguments=arguments,
        index=index,
    )


def _items(value: Any) -> list[tuple[int, JSONObject]]:
    return [(i, item) for i, item in enumerate(as_list(value)) if isinstance(item, dict)]


class ResponsesCodec(BodyCodec):
    """The `Codec` for OpenAI Responses."""

    name: ProtocolName = "openai-responses"

    def __init__(self) -> None:
        super().__init__(ResponsesAssembler, whole_body, CONVERSATION, CHAT)

    def finish_reason(self, output: JSONObject | None) -> str | None:
        """`status`, or for an incomplete response `incomplete_details.reason`."""
        if output is None:
            return None
        if output.get("status") == "incomplete":
            reason = as_str(get_path(output, "incomplete_details", "reason"))
            if reason is not None:
                return reason
        return as_str(output.get("status"))

    def usage(self, output: JSONObject | None) -> Usage | None:
        """`input_tokens` includes cached tokens (`input_tokens_details.cached_tokens`)."""
        usage = as_object(output.get("usage")) if output is not None else None
        if usage is None:
            return None
        return Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=as_int(usage.get("output_tokens")),
            cache_read_tokens=as_int(get_path(usage, "input_tokens_details", "cached_tokens")),
            total_tokens=as_int(usage.get("total_tokens")),
            raw=usage,
        )

    def output_tool_calls(self, output: JSONObject | None) -> list[ToolCall]:
        """Output items that ask the client to run a tool: `function_call`,
        `custom_tool_call` and every other `*_call` item with a `call_id`."""
        items = output.get("output") if output is not None else None
        return [_tool_call(item, i) for i, item in _items(items) if _is_call(item)]

    def tool_call_marker_without_identity(self, output: JSONObject | None) -> bool:
        """Responses has no "stopped for tool calls" marker apart from the items."""
        return False

    def context_tool_calls(self, request: JSONObject | None) -> list[ToolCall]:
        items = request.get("input") if request is not None else None
        return [_tool_call(item, i) for i, item in _items(items) if _is_call(item)]

    def context_tool_results(self, request: JSONObject | None) -> list[ToolResult]:
        """`function_call_output`, `custom_tool_call_output` and other `*_call_output`
        input items (`call_id`, own `id` when the client minted one)."""
        items = request.get("input") if request is not None else None
        return [
            ToolResult(
                id=as_str(item.get("call_id")),
                name=as_str(item.get("name")),
                text=flatten_text(item.get("output")),
                message_index=i,
                item_id=as_str(item.get("id")),
            )
            for i, item in _items(items)
            if (as_str(item.get("type")) or "").endswith("_call_output")
        ]

    def context_texts(self, request: JSONObject | None) -> list[str]:
        """`instructions`, then the input: a string, or items (message content strings
        and text parts, tool outputs), in order."""
        if request is None:
            return []
        texts: list[str] = []
        instructions = request.get("instructions")
        if isinstance(instructions, str):
            texts.append(instructions)
        items = request.get("input")
        if isinstance(items, str):
            texts.append(items)
            return texts
        for _, item in _items(items):
            kind = as_str(item.get("type")) or ""
            if kind.endswith("_call_output"):
                texts.append(flatten_text(item.get("output")))
                continue
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            for part in as_list(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
        return texts

    def offered_tools(self, request: JSONObject | None) -> list[str]:
        """Named tools; a namespace's tools as `namespace.name` (Codex `multi_agent_v1`);
        `tools` and the definitions carried by input items (`tools.definitions`)."""
        names: list[str] = []
        for tool in as_list(definitions(request)):
            if not isinstance(tool, dict):
                continue
            name = as_str(tool.get("name"))
            if tool.get("type") == "namespace":
                for inner in as_list(tool.get("tools")):
                    inner_name = as_str(get_path(inner, "name"))
                    if inner_name is not None:
                        names.append(f"{name}.{inner_name}" if name else inner_name)
            elif name is not None:
                names.append(name)
        return names

    def json_mode(self, request: Any) -> bool:
        text = request.get("text") if isinstance(request, dict) else None
        fmt = text.get("format") if isinstance(text, dict) else None
        return isinstance(fmt, dict) and fmt.get("type") in _JSON_FORMATS


CODEC = ResponsesCodec()

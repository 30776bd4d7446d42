"""Gemini: the `Codec` — response accessors, tool references, JSON mode.

The requested model and whether the response streams are the endpoint's
(`models/M:streamGenerateContent`, `roller.wire.endpoints`), not the body's. Tool
references: the real API usually omits `functionCall.id`; Gemini CLI then mints one and
sends it back in `functionCall.id` and `functionResponse.id`. Requests may spell fields
in camelCase or snake_case (the REST API accepts both); both are read. JSON mode is
`generationConfig` with `responseMimeType: application/json` or a response schema.
Reassembly is `stream`, the conversation layout `history`,
its OpenAI chat form `chat`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roller.wire.bodies import BodyCodec
from roller.wire.jsonvalues import (
    as_int,
    as_list,
    as_object,
    as_str,
    compact_json,
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

if TYPE_CHECKING:
    from roller.wire.endpoints import Endpoint
from roller.wire.gemini.chat import CHAT
from roller.wire.gemini.history import CONVERSATION
from roller.wire.gemini.stream import GeminiAssembler, whole_body

__all__ = ["CODEC", "GeminiCodec"]


def _field(obj: Any, camel: str, snake: str) -> Any:
    if not isinstance(obj, dict):
        return None
    return obj[camel] if camel in obj else obj.get(snake)


def _parts(content: Any) -> list[JSONObject]:
    return [p for p in as_list(get_path(content, "parts")) if isinstance(p, dict)]


def _contents(request: JSONObject | None) -> list[tuple[int, JSONObject]]:
    contents = as_list(request.get("contents")) if request is not None else []
    return [(i, c) for i, c in enumerate(contents) if isinstance(c, dict)]


def _call(part: JSONObject, index: int) -> ToolCall | None:
    call = as_object(_field(part, "functionCall", "function_call"))
    if call is None:
        return None
    return ToolCall(
        id=as_str(call.get("id")),
        name=as_str(call.get("name")),
        arguments=call.get("args"),
        index=index,
    )


def _response_text(response: Any) -> str:
    """A functionResponse's `response` as text: its `output` (Gemini CLI's shape) or
    `error` string when it has one, else the object as compact JSON."""
    for key in ("output", "error"):
        text = get_path(response, key)
        if isinstance(text, str):
            return text
    if isinstance(response, dict):
        return compact_json(response)
    return flatten_text(response)


class GeminiCodec(BodyCodec):
    """The `Codec` for the Gemini API."""

    name: ProtocolName = "gemini"

    def __init__(self) -> None:
        super().__init__(GeminiAssembler, whole_body, CONVERSATION, CHAT)

    def is_streaming_request(self, request: JSONObject | None, endpoint: Endpoint) -> bool:
        return endpoint.stream

    def request_model(self, request: JSONObject | None, endpoint: Endpoint) -> str | None:
        return endpoint.model

    def response_model(self, output: JSONObject | None) -> str | None:
        return as_str(output.get("modelVersion")) if output is not None else None

    def response_id(self, output: JSONObject | None) -> str | None:
        return as_str(output.get("responseId")) if output is not None else None

    def finish_reason(self, output: JSONObject | None) -> str | None:
        """The first candidate's `finishReason`, else a prompt `blockReason`."""
        if output is None:
            return None
        reason = as_str(get_path(output, "candidates", 0, "finishReason"))
        return reason or as_str(get_path(output, "promptFeedback", "blockReason"))

    def usage(self, output: JSONObject | None) -> Usage | None:
        """`output_tokens` is `candidatesTokenCount` plus `thoughtsTokenCount` (thinking
        is output, as in OpenAI's counts); `promptTokenCount` includes cached content."""
        usage = as_object(output.get("usageMetadata")) if output is not None else None
        if usage is None:
            return None
        candidates = as_int(usage.get("candidatesTokenCount"))
        thoughts = as_int(usage.get("thoughtsTokenCount"))
        output_tokens = (
            None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        )
        return Usage(
            input_tokens=as_int(usage.get("promptTokenCount")),
            output_tokens=output_tokens,
            cache_read_tokens=as_int(usage.get("cachedContentTokenCount")),
            total_tokens=as_int(usage.get("totalTokenCount")),
            raw=usage,
        )

    def output_tool_calls(self, output: JSONObject | None) -> list[ToolCall]:
        """`functionCall` parts of every candidate, in order."""
        candidates = as_list(output.get("candidates")) if output is not None else []
        return [
            call
            for candidate in candidates
            for index, part in enumerate(_parts(get_path(candidate, "content")))
            if (call := _call(part, index)) is not None
        ]

    def tool_call_marker_without_identity(self, output: JSONObject | None) -> bool:
        """Gemini has no "stopped for tool calls" finish reason."""
        return False

    def context_tool_calls(self, request: JSONObject | None) -> list[ToolCall]:
        return [
            call
            for index, content in _contents(request)
            for part in _parts(content)
            if (call := _call(part, index)) is not None
        ]

    def context_tool_results(self, request: JSONObject | None) -> list[ToolResult]:
        results: list[ToolResult] = []
        for index, content in _contents(request):
            for part in _parts(content):
                response = as_object(_field(part, "functionResponse", "function_response"))
                if response is None:
                    continue
                results.append(
                    ToolResult(
                        id=as_str(response.get("id")),
                        name=as_str(response.get("name")),
                        text=_response_text(response.get("response")),
                        message_index=index,
                    )
                )
        return results

    def context_texts(self, request: JSONObject | None) -> list[str]:
        """`systemInstruction` texts, then every content's text parts and function
        responses, in order."""
        if request is None:
            return []
        texts: list[str] = []
        system = _field(request, "systemInstruction", "system_instruction")
        if isinstance(system, str):
            texts.append(system)
        texts.extend(t for p in _parts(system) if isinstance(t := p.get("text"), str))
        for _, content in _contents(request):
            for part in _parts(content):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                response = as_object(_field(part, "functionResponse", "function_response"))
                if response is not None:
                    texts.append(_response_text(response.get("response")))
        return texts

    def offered_tools(self, request: JSONObject | None) -> list[str]:
        names: list[str] = []
        for tool in as_list(request.get("tools") if request is not None else None):
            declarations = _field(tool, "functionDeclarations", "function_declarations")
            for declaration in as_list(declarations):
                name = as_str(get_path(declaration, "name"))
                if name is not None:
                    names.append(name)
        return names

    def json_mode(self, request: Any) -> bool:
        cfg = request.get("generationConfig") if isinstance(request, dict) else None
        if not isinstance(cfg, dict):
            return False
        mime = cfg.get("responseMimeType")
        return mime == "application/json" or "responseJsonSchema" in cfg or "responseSchema" in cfg


CODEC = GeminiCodec()

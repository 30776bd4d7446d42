"""The opt-in content attributes of OpenTelemetry GenAI spans (`--content`).

The GenAI semantic conventions carry messages as JSON (`gen_ai.input.messages`,
`gen_ai.output.messages`, `gen_ai.system_instructions`, `gen_ai.tool.definitions`):
`[{"role", "parts": [...]}]` with parts `{"type": "text", "content"}`,
`{"type": "tool_call", "id", "name", "arguments"}`,
`{"type": "tool_call_response", "id", "response"}`, `{"type": "reasoning", "content"}`;
output messages add `finish_reason`. Built from the OpenAI chat view
(`Codec.chat`, `roller.wire.chat`), so every protocol maps the same way; a part the chat view
kept verbatim is carried as `{"type": <its type>, "content": <it>}`.
"""

from __future__ import annotations

import json
from typing import Any

from roller.capture.models import CallRecord
from roller.export.openai_messages import reply_view, request_view
from roller.wire.chat import arguments_value


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        parts.append({"type": "reasoning", "content": message["reasoning_content"]})
    content = message.get("content")
    if message.get("role") == "tool":
        return [
            {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
        ]
    if isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "text", "content": part.get("text")})
        else:
            kind = part.get("type") if isinstance(part, dict) else "json"
            parts.append({"type": kind, "content": part})
    for call in message.get("tool_calls") or []:
        body = call.get("function") or call.get("custom") or {}
        raw = body.get("arguments", body.get("input"))
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": body.get("name"),
                "arguments": arguments_value(raw),
            }
        )
    return parts


def _messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": m.get("role"), "parts": _parts(m)} for m in messages]


def chat_content(call: CallRecord) -> dict[str, str]:
    """The content attributes of one call's `chat` span, JSON-encoded."""
    view = request_view(call)
    if view is None:
        return {}
    messages = view.plain()
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    out = {
        "gen_ai.input.messages": _dumps(_messages(rest)),
        "gen_ai.tool.definitions": _dumps(list(view.tools)),
    }
    if system:
        out["gen_ai.system_instructions"] = _dumps(
            [p for m in _messages(system) for p in m["parts"]]
        )
    if call.output is not None:
        reply = _messages(reply_view(call).plain())
        for message in reply:
            message["finish_reason"] = call.finish_reason
        out["gen_ai.output.messages"] = _dumps(reply)
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def reply_messages(call: CallRecord) -> list[dict[str, Any]]:
    """The call's output as chat messages (what `tool_arguments` reads)."""
    return reply_view(call).plain()


def request_messages(call: CallRecord) -> list[dict[str, Any]]:
    """The call's input as chat messages (what `tool_result` reads); none unreadable."""
    view = request_view(call)
    return view.plain() if view is not None else []


def tool_arguments(reply: list[dict[str, Any]], tool_id: str) -> dict[str, str]:
    """`gen_ai.tool.call.arguments` of tool call `tool_id` in an output's messages."""
    out: dict[str, str] = {}
    for message in reply:
        for tool in message.get("tool_calls") or []:
            if tool.get("id") == tool_id:
                body = tool.get("function") or tool.get("custom") or {}
                out["gen_ai.tool.call.arguments"] = _dumps(
                    arguments_value(body.get("arguments", body.get("input")))
                )
    return out


def tool_result(request: list[dict[str, Any]], tool_id: str) -> dict[str, str]:
    """`gen_ai.tool.call.result` of tool call `tool_id` in an input's messages."""
    out: dict[str, str] = {}
    for message in request:
        if message.get("role") == "tool" and message.get("tool_call_id") == tool_id:
            out["gen_ai.tool.call.result"] = _dumps(message.get("content"))
    return out

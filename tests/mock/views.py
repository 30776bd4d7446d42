"""Request bodies for tests, read through the mock's own dialects into RequestViews."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from roller.mock.dialects import DIALECTS
from roller.mock.request_view import RequestView


def anthropic(
    messages: list[Any], tools: list[dict[str, Any]] | None = None, **extra: Any
) -> RequestView:
    body = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": messages,
        "tools": tools or [],
        **extra,
    }
    return _read("anthropic-messages", body)


def chat(messages: list[Any], tools: list[str] | None = None, **extra: Any) -> RequestView:
    body: dict[str, Any] = {"model": "gpt-x", "messages": messages, **extra}
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in tools
        ]
    return _read("openai-chat-completions", body)


def responses(items: Any, tools: list[dict[str, Any]] | None = None, **extra: Any) -> RequestView:
    return _read(
        "openai-responses", {"model": "gpt-x", "input": items, "tools": tools or [], **extra}
    )


def gemini(contents: list[Any], **extra: Any) -> RequestView:
    return _read("gemini", {"contents": contents, **extra}, model="gemini-x")


def _read(protocol: Any, body: dict[str, Any], model: str | None = None) -> RequestView:
    view = DIALECTS[protocol].read(body, path_model=model, path_stream=False)
    return dataclasses.replace(view, body_size=len(json.dumps(body)))

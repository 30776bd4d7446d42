"""Gemini: where a request's conversation is, and when two items match.

- The items are `contents`; the system prompt is `systemInstruction` (its parts' text).
- The output as a history item is `candidates[0].content`.
- A content is keyed by its role and its parts: text by its text (empty ones dropped),
  `functionCall` by name and args (the API names no id; the harness mints one and may
  add it to the history), `functionResponse` by name and response; `thought` parts are
  never compared; any other part by its whole value minus `thoughtSignature`.
"""

from __future__ import annotations

from typing import Any

from roller.wire.history import Conversation, canon, without
from roller.wire.types import Key


def output_items(output: Any) -> list[Any]:
    if not isinstance(output, dict):
        return []
    candidates = output.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        content = candidates[0].get("content")
        return [content] if isinstance(content, dict) else []
    return []


def _part(part: Any) -> Key:
    if not isinstance(part, dict):
        return canon(part)
    if part.get("thought") is True:
        return None
    if isinstance(part.get("text"), str):
        return ("text", part["text"]) if part["text"] else None
    call = part.get("functionCall")
    if isinstance(call, dict):
        return ("functionCall", call.get("name"), canon(call.get("args")))
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return ("functionResponse", response.get("name"), canon(response.get("response")))
    return ("part", canon(without(part, "thoughtSignature")))


def item_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return canon(item)
    parts = item.get("parts")
    if not isinstance(parts, list):
        return ("content", item.get("role"), canon(parts))
    keys = (_part(p) for p in parts)
    return ("content", item.get("role"), tuple(k for k in keys if k is not None))


CONVERSATION = Conversation("contents", "systemInstruction", output_items, item_key)

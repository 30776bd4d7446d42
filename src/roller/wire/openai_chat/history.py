"""OpenAI Chat Completions: where a request's conversation is, and when two items match.

- The items are `messages`; there is no separate system prompt (system and developer
  messages are items).
- The output as a history item is `choices[0].message`.
- A message is keyed by its role, its content (text parts by their text, empty ones
  dropped; other parts by their whole value minus `cache_control`), its tool calls (id,
  function name, arguments as JSON) and the `tool_call_id` it answers. Reasoning fields
  are not part of the key.
"""

from __future__ import annotations

from typing import Any

from roller.wire.history import Conversation, arguments, canon, without
from roller.wire.types import Key


def output_items(output: Any) -> list[Any]:
    if not isinstance(output, dict):
        return []
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return [message] if isinstance(message, dict) else []
    return []


def _content(content: Any) -> Key:
    if content is None:
        return ()
    if isinstance(content, str):
        return (("text", content),) if content else ()
    if isinstance(content, list):
        out: list[Key] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                if part.get("text"):
                    out.append(("text", part.get("text")))
            else:
                kept = without(part, "cache_control") if isinstance(part, dict) else part
                out.append(("part", canon(kept)))
        return tuple(out)
    return canon(content)


def _tool_call(call: Any) -> Key:
    if not isinstance(call, dict):
        return canon(call)
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    return (call.get("id"), function.get("name"), arguments(function.get("arguments")))


def item_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return canon(item)
    calls = item.get("tool_calls") or []
    return (
        "message",
        item.get("role"),
        _content(item.get("content")),
        tuple(_tool_call(c) for c in calls) if isinstance(calls, list) else canon(calls),
        item.get("tool_call_id"),
    )


CONVERSATION = Conversation("messages", None, output_items, item_key)

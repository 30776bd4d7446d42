"""Anthropic Messages: where a request's conversation is, and when two items match.

- The items are `messages`; the system prompt is `system` (a string or text blocks).
- The output as a history item is `{"role", "content"}` of the response message.
- A message is keyed by its role and its blocks: text by its text (an empty text block
  is dropped), `tool_use` / `server_tool_use` by id, name and input, `tool_result` by the
  id it answers, its error flag and its content; `thinking` / `redacted_thinking` are
  never compared; any other block by its whole value minus `cache_control`.
- Tools load at run time through `tool_reference` blocks (at the top level or inside a
  tool result) and `tool_search_tool_result` blocks.
"""

from __future__ import annotations

from typing import Any

from roller.wire.history import Conversation, canon, without
from roller.wire.types import Key

_TOOL_LOADING = ("tool_reference", "tool_search_tool_result")


def output_items(output: Any) -> list[Any]:
    if not isinstance(output, dict):
        return []
    content = output.get("content")
    if not isinstance(content, list):
        return []
    return [{"role": output.get("role", "assistant"), "content": content}]


def _block(block: Any) -> Key:
    if not isinstance(block, dict):
        return canon(block)
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return None if text == "" else ("text", text)
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind in ("tool_use", "server_tool_use"):
        return (kind, block.get("id"), block.get("name"), canon(block.get("input")))
    if kind == "tool_result":
        content = block.get("content")
        return (
            kind,
            block.get("tool_use_id"),
            bool(block.get("is_error", False)),
            _content(content) if content is not None else (),
        )
    return ("part", canon(without(block, "cache_control")))


def _content(content: Any) -> Key:
    if isinstance(content, str):
        return (("text", content),) if content else ()
    if isinstance(content, list):
        keys = (_block(b) for b in content)
        return tuple(k for k in keys if k is not None)
    return canon(content)


def item_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return canon(item)
    return ("message", item.get("role"), _content(item.get("content")))


def loads_tools(item: Any) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("content"), list):
        return None
    for block in item["content"]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in _TOOL_LOADING:
            return str(kind)
        inner = block.get("content") if kind == "tool_result" else None
        if isinstance(inner, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_reference" for b in inner
        ):
            return "tool_reference"
    return None


CONVERSATION = Conversation("messages", "system", output_items, item_key, loads_tools=loads_tools)

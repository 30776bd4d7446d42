"""OpenAI Responses: where a request's conversation is, and when two items match.

- The items are `input` (a bare string is one user message); the system prompt is
  `instructions`. `previous_response_id` and `conversation` make the provider hold the
  history instead of the request.
- The output as history items is `output[]`.
- Items are keyed by type: a message by its role and text parts (`input_text`,
  `output_text`, `text`; empty ones dropped; other parts whole); a `function_call` by
  `call_id`, namespace, name and arguments as JSON; a `function_call_output` /
  `custom_tool_call_output` by `call_id` and output; `reasoning` is never compared; any
  other item by its whole value minus `id` and `status` (Codex re-sends output items with
  minted ids).
- Tools load at run time through `tool_search_call` / `tool_search_output` items (Codex),
  and arrive in the conversation as `additional_tools` items (Codex code mode): the
  history's `tools` are every definition the request offers (`tools.definitions`).
"""

from __future__ import annotations

from typing import Any

from roller.wire.history import Conversation, arguments, canon, without
from roller.wire.openai_responses.tools import definitions
from roller.wire.types import Key

# Text content part types, and the items that carry a tool's result (also `chat`'s).
TEXT_PARTS = ("input_text", "output_text", "text")
RESULT_ITEMS = ("function_call_output", "custom_tool_call_output")
_TOOL_LOADING = ("tool_search_call", "tool_search_output", "additional_tools")


def output_items(output: Any) -> list[Any]:
    if not isinstance(output, dict):
        return []
    items = output.get("output")
    return list(items) if isinstance(items, list) else []


def _content(content: Any) -> Key:
    if isinstance(content, str):
        return (("text", content),) if content else ()
    if isinstance(content, list):
        out: list[Key] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in TEXT_PARTS:
                if part.get("text"):
                    out.append(("text", part.get("text")))
            else:
                out.append(("part", canon(part)))
        return tuple(out)
    return canon(content)


def item_type(item: Any) -> str | None:
    """An item's type: a string or an item with a role and no type is a message."""
    if isinstance(item, str):
        return "message"
    if not isinstance(item, dict):
        return None
    kind = item.get("type", "message" if "role" in item else None)
    return kind if isinstance(kind, str) else None


def item_key(item: Any) -> Key:
    if isinstance(item, str):
        return ("message", "user", (("text", item),) if item else ())
    if not isinstance(item, dict):
        return canon(item)
    kind = item_type(item)
    if kind == "reasoning":
        return None
    if kind == "message":
        return ("message", item.get("role"), _content(item.get("content")))
    if kind == "function_call":
        return (
            kind,
            item.get("call_id"),
            item.get("namespace"),
            item.get("name"),
            arguments(item.get("arguments")),
        )
    if kind in RESULT_ITEMS:
        return (kind, item.get("call_id"), canon(item.get("output")))
    return ("item", canon(without(item, "id", "status")))


def loads_tools(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    return kind if kind in _TOOL_LOADING else None


CONVERSATION = Conversation(
    "input",
    "instructions",
    output_items,
    item_key,
    loads_tools=loads_tools,
    server_state_fields=("previous_response_id", "conversation"),
    string_items=True,
    tools_of=definitions,
)

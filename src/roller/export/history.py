"""How each protocol carries a conversation: where its history is, and when two items match.

A model request of every protocol roller records resends the conversation so far; the
main trajectory is built by checking that each root call's input extends the previous
one's input plus output. This module owns the per-protocol facts that check needs, with
no cross-protocol conversion:
- `history_of(protocol, context)`: the request's item list (Anthropic and Chat
  `messages`, Responses `input`, Gemini `contents`), its system prompt (Anthropic
  `system`, Responses `instructions`, Gemini `systemInstruction`; Chat has none: its
  system messages are items), `tools`, and the rest of the configuration.
- `output_items(protocol, output)`: the response as the protocol's own history item(s):
  Anthropic `{"role", "content"}`, Chat `choices[0].message`, Responses `output[]`,
  Gemini `candidates[0].content`.
- `item_key(protocol, item)`: what "the same message" means — a hashable projection;
  two items are the same message when their keys are equal. `None` means the item is
  not compared at all.

What is compared (everything else is the harness's normal re-serialization and ignored):
- role; text by its exact text (a string content equals one text part with that text;
  an empty text part is dropped, as the APIs reject them in history);
- tool calls by id, name (Responses: and namespace) and arguments; arguments that
  parse as JSON compare as JSON values, so re-serialized spacing does not matter;
- tool results by the tool-call id they answer, their error flag and their content;
- any other part or item by its whole JSON value minus `cache_control` (Anthropic
  prompt-caching markers move between calls) and, for Responses items, minus the item
  `id` and `status` (Codex re-sends output items with minted ids);
- reasoning is never compared (Anthropic `thinking` / `redacted_thinking` blocks,
  Responses `reasoning` items, Gemini `thought` parts, Chat reasoning fields): harnesses
  and APIs keep or drop it between turns. The trajectory keeps the output's own copy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

ANTHROPIC = "anthropic-messages"
CHAT = "openai-chat-completions"
RESPONSES = "openai-responses"
GEMINI = "gemini"

_ITEMS_FIELD = {ANTHROPIC: "messages", CHAT: "messages", RESPONSES: "input", GEMINI: "contents"}
_SYSTEM_FIELD = {ANTHROPIC: "system", RESPONSES: "instructions", GEMINI: "systemInstruction"}
# Responses fields that make the provider hold the history instead of the request.
SERVER_STATE_FIELDS = ("previous_response_id", "conversation")

SUPPORTED = frozenset(_ITEMS_FIELD)

Key = Hashable


@dataclass(frozen=True)
class History:
    """A request split into the conversation and its configuration."""

    items: list[Any]
    system: Key  # comparable projection of the system prompt (None when absent)
    tools: Any  # the `tools` value verbatim (None when absent)
    config: dict[str, Any]  # the body without the item list and without `tools`


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _without(value: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in names}


def _arguments(value: Any) -> str:
    """Tool arguments as a JSON value when they parse, else as given."""
    if isinstance(value, str):
        try:
            return _canon(json.loads(value))
        except json.JSONDecodeError:
            return value
    return _canon(value)


def _texts(value: Any) -> Key:
    """A system prompt or content that may be a string or a list of text parts."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, dict) and isinstance(value.get("parts"), list):  # Gemini Content
        value = value["parts"]
    if isinstance(value, list):
        out: list[str] = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                if part["text"]:
                    out.append(part["text"])
            else:
                out.append(
                    _canon(_without(part, "cache_control") if isinstance(part, dict) else part)
                )
        return tuple(out)
    return _canon(value)


def history_of(protocol: str, context: Any) -> History | None:
    """The request's conversation and configuration; None when it has no readable history."""
    field = _ITEMS_FIELD.get(protocol)
    if field is None or not isinstance(context, dict):
        return None
    items = context.get(field)
    if protocol == RESPONSES and isinstance(items, str):
        items = [items]  # a bare string input is one user message
    if not isinstance(items, list):
        return None
    system_field = _SYSTEM_FIELD.get(protocol)
    return History(
        items=items,
        system=_texts(context.get(system_field)) if system_field else None,
        tools=context.get("tools"),
        config=_without(context, field, "tools"),
    )


def output_items(protocol: str, output: Any) -> list[Any]:
    """The response as the history item(s) the protocol would resend; [] when none."""
    if not isinstance(output, dict):
        return []
    if protocol == ANTHROPIC:
        content = output.get("content")
        if not isinstance(content, list):
            return []
        return [{"role": output.get("role", "assistant"), "content": content}]
    if protocol == CHAT:
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            return [message] if isinstance(message, dict) else []
        return []
    if protocol == RESPONSES:
        items = output.get("output")
        return list(items) if isinstance(items, list) else []
    if protocol == GEMINI:
        candidates = output.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            content = candidates[0].get("content")
            return [content] if isinstance(content, dict) else []
    return []


# --- Anthropic Messages --------------------------------------------------------------


def _anthropic_block(block: Any) -> Key:
    if not isinstance(block, dict):
        return _canon(block)
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return None if text == "" else ("text", text)
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind in ("tool_use", "server_tool_use"):
        return (kind, block.get("id"), block.get("name"), _canon(block.get("input")))
    if kind == "tool_result":
        content = block.get("content")
        return (
            kind,
            block.get("tool_use_id"),
            bool(block.get("is_error", False)),
            _anthropic_content(content) if content is not None else (),
        )
    return ("part", _canon(_without(block, "cache_control")))


def _anthropic_content(content: Any) -> Key:
    if isinstance(content, str):
        return (("text", content),) if content else ()
    if isinstance(content, list):
        keys = (_anthropic_block(b) for b in content)
        return tuple(k for k in keys if k is not None)
    return _canon(content)


def _anthropic_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return _canon(item)
    return ("message", item.get("role"), _anthropic_content(item.get("content")))


# --- OpenAI Chat Completions ---------------------------------------------------------


def _chat_content(content: Any) -> Key:
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
                out.append(
                    (
                        "part",
                        _canon(_without(part, "cache_control") if isinstance(part, dict) else part),
                    )
                )
        return tuple(out)
    return _canon(content)


def _chat_tool_call(call: Any) -> Key:
    if not isinstance(call, dict):
        return _canon(call)
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    return (call.get("id"), function.get("name"), _arguments(function.get("arguments")))


def _chat_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return _canon(item)
    calls = item.get("tool_calls") or []
    return (
        "message",
        item.get("role"),
        _chat_content(item.get("content")),
        tuple(_chat_tool_call(c) for c in calls) if isinstance(calls, list) else _canon(calls),
        item.get("tool_call_id"),
    )


# --- OpenAI Responses ----------------------------------------------------------------


def _responses_content(content: Any) -> Key:
    if isinstance(content, str):
        return (("text", content),) if content else ()
    if isinstance(content, list):
        out: list[Key] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
                if part.get("text"):
                    out.append(("text", part.get("text")))
            else:
                out.append(("part", _canon(part)))
        return tuple(out)
    return _canon(content)


def _responses_key(item: Any) -> Key:
    if isinstance(item, str):
        return ("message", "user", (("text", item),) if item else ())
    if not isinstance(item, dict):
        return _canon(item)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "reasoning":
        return None
    if kind == "message":
        return ("message", item.get("role"), _responses_content(item.get("content")))
    if kind == "function_call":
        return (
            kind,
            item.get("call_id"),
            item.get("namespace"),
            item.get("name"),
            _arguments(item.get("arguments")),
        )
    if kind in ("function_call_output", "custom_tool_call_output"):
        return (kind, item.get("call_id"), _canon(item.get("output")))
    return ("item", _canon(_without(item, "id", "status")))


# --- Gemini --------------------------------------------------------------------------


def _gemini_part(part: Any) -> Key:
    if not isinstance(part, dict):
        return _canon(part)
    if part.get("thought") is True:
        return None
    if isinstance(part.get("text"), str):
        return ("text", part["text"]) if part["text"] else None
    call = part.get("functionCall")
    if isinstance(call, dict):
        # Gemini's API names no id; the harness mints one and may add it to the history.
        return ("functionCall", call.get("name"), _canon(call.get("args")))
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return ("functionResponse", response.get("name"), _canon(response.get("response")))
    return ("part", _canon(_without(part, "thoughtSignature")))


def _gemini_key(item: Any) -> Key:
    if not isinstance(item, dict):
        return _canon(item)
    parts = item.get("parts")
    if not isinstance(parts, list):
        return ("content", item.get("role"), _canon(parts))
    keys = (_gemini_part(p) for p in parts)
    return ("content", item.get("role"), tuple(k for k in keys if k is not None))


_KEYS: dict[str, Callable[[Any], Key]] = {
    ANTHROPIC: _anthropic_key,
    CHAT: _chat_key,
    RESPONSES: _responses_key,
    GEMINI: _gemini_key,
}


def item_key(protocol: str, item: Any) -> Key:
    """The comparable projection of one history item (None: not compared)."""
    return _KEYS[protocol](item)


def describe_key(key: Key) -> str:
    """A short human description of an item for divergence messages."""
    if isinstance(key, tuple) and len(key) >= 2 and key[0] in ("message", "content"):
        return f"{key[1]} message"
    if isinstance(key, tuple) and key and isinstance(key[0], str):
        return key[0]
    return "item"


def loads_tools(protocol: str, item: Any) -> str | None:
    """What in this item loads tool definitions at run time, if anything.

    Responses `tool_search_call` / `tool_search_output` items (Codex), Anthropic
    `tool_reference` blocks (at the top level or inside a tool result) and
    `tool_search_tool_result` blocks: after them the model sees tools that no static
    `tools` list of the request describes.
    """
    if not isinstance(item, dict):
        return None
    if protocol == RESPONSES:
        kind = item.get("type")
        return kind if kind in ("tool_search_call", "tool_search_output") else None
    if protocol == ANTHROPIC and isinstance(item.get("content"), list):
        for block in item["content"]:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("tool_reference", "tool_search_tool_result"):
                return str(kind)
            inner = block.get("content") if kind == "tool_result" else None
            if isinstance(inner, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_reference" for b in inner
            ):
                return "tool_reference"
    return None

"""What every codec shares about the conversation a request resends.

A model request of every protocol roller records resends the conversation so far; the
main trajectory (`roller.export.trajectory`) is built by checking that each root call's
input extends the previous one's input plus output. Each codec says, for its protocol
(`Codec.history`, `system_prompt`, `output_items`, `item_key`, `loads_tools`,
`server_state`: the per-protocol facts are its package's `history` module, one
`Conversation` record), where the items and the system prompt are and what "the same
message" means. This module holds the parts they
share, with no cross-protocol conversion.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from roller.wire.types import History, Key


def no_tool_loading(item: Any) -> str | None:
    """A protocol whose history never loads tools at run time."""
    return None


@dataclass(frozen=True, slots=True)
class Conversation:
    """How one protocol carries a conversation: each protocol package's `history`
    module declares one (`CONVERSATION`) and its codec serves it (`BodyCodec`)."""

    items_field: str  # the request field that holds the item list
    system_field: str | None  # the system prompt's field; None: system text is an item
    output_items: Callable[[Any], list[Any]]
    item_key: Callable[[Any], Key]
    loads_tools: Callable[[Any], str | None] = no_tool_loading
    # Request fields that make the provider hold the history instead of the request.
    server_state_fields: tuple[str, ...] = ()
    # Whether the item field may be a bare string, one user message (Responses `input`).
    string_items: bool = False
    # Every tool definition a request offers, when not only its `tools` field (Responses
    # also carries some in input items); None: the `tools` value.
    tools_of: Callable[[Any], Any] | None = None

    def history_of(self, context: Any) -> History | None:
        field = self.items_field
        if self.string_items and isinstance(context, dict) and isinstance(context.get(field), str):
            context = {**context, field: [context[field]]}
        history = split_history(context, field, self.system_field)
        if history is None or self.tools_of is None:
            return history
        return replace(history, tools=self.tools_of(context))

    def system_prompt(self, config: Any) -> Any:
        """The system prompt verbatim, from a request body or its `History.config`."""
        if self.system_field is None or not isinstance(config, dict):
            return None
        return config.get(self.system_field)


def canon(value: Any) -> str:
    """Canonical JSON text of a value (sorted keys, no spaces, unicode kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def without(value: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in names}


def arguments(value: Any) -> str:
    """Tool arguments as a JSON value when they parse, else as given."""
    if isinstance(value, str):
        try:
            return canon(json.loads(value))
        except json.JSONDecodeError:
            return value
    return canon(value)


def texts(value: Any) -> Key:
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
                    canon(without(part, "cache_control") if isinstance(part, dict) else part)
                )
        return tuple(out)
    return canon(value)


def split_history(context: Any, items_field: str, system_field: str | None) -> History | None:
    """`context` split into its item list (`items_field`), the system prompt's projection
    (`system_field`; None when the protocol keeps system text among the items), `tools`
    and the rest; None when the context has no item list."""
    if not isinstance(context, dict):
        return None
    items = context.get(items_field)
    if not isinstance(items, list):
        return None
    return History(
        items=items,
        system=texts(context.get(system_field)) if system_field else None,
        tools=context.get("tools"),
        config=without(context, items_field, "tools"),
    )


def describe_key(key: Key) -> str:
    """A short human description of an item key for divergence messages."""
    if isinstance(key, tuple) and len(key) >= 2 and key[0] in ("message", "content"):
        return f"{key[1]} message"
    if isinstance(key, tuple) and key and isinstance(key[0], str):
        return key[0]
    return "item"

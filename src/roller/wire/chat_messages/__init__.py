"""Every protocol's conversation as OpenAI chat `messages` + `tools` + the assistant reply.

One module per protocol (`anthropic`, `openai_chat`, `openai_responses`, `gemini`), each
the same shape (`Normaliser`): where its items, system prompt and tools live, the
response as history items, `view` (system + items -> chat messages with their
origins), `tools_view`, `restore` (the inverse of `view`, by origins) and whether its
input token count includes cache reads. They never import each other (import
contract), only `view`. The table below is the one dispatch; nothing outside
`roller.wire` branches on a protocol to normalise.

What survives a round trip (`restore(view(x))`): roles, text exactly, tool calls by id,
name and arguments, tool results by id, error flag and content, images, and every
untranslated part or item verbatim — the same messages by the main trajectory's
definition (`docs/protocol.md`, "The same message"). Not kept: reasoning block
boundaries and signatures, Responses encrypted reasoning, `cache_control` markers,
Gemini `thoughtSignature`s (`docs/exports.md`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from roller.wire.chat_messages import anthropic, gemini, openai_chat, openai_responses
from roller.wire.chat_messages.view import SYSTEM, ChatMessage, ChatView
from roller.wire.types import JSONObject, ProtocolName

__all__ = [
    "SYSTEM",
    "ChatMessage",
    "ChatView",
    "Normaliser",
    "normaliser",
    "prompt_tokens",
    "reply_view",
    "request_view",
    "restore_request",
]


class Normaliser(Protocol):
    NAME: str
    ITEMS_FIELD: str
    SYSTEM_FIELD: str | None
    TOOLS_FIELD: str
    STRING_ITEMS: bool
    INPUT_TOKENS_INCLUDE_CACHE: bool
    PROVIDER: str

    def output_items(self, output: Any) -> list[Any]: ...

    def view(
        self, system: Any, items: Sequence[Any], tool_ids: Sequence[str | None] = ()
    ) -> ChatView: ...

    def tools_view(self, tools: Any) -> ChatView: ...

    def restore(self, messages: Sequence[ChatMessage]) -> tuple[Any, list[Any]]: ...


_NORMALISERS: dict[str, Normaliser] = {
    m.NAME: m for m in (anthropic, openai_chat, openai_responses, gemini)
}


def normaliser(protocol: ProtocolName | str | None) -> Normaliser | None:
    """The protocol's normaliser; None for a protocol roller cannot read."""
    return _NORMALISERS.get(protocol or "")


def _split(n: Normaliser, request: Any) -> tuple[Any, list[Any]] | None:
    if not isinstance(request, dict):
        return None
    items = request.get(n.ITEMS_FIELD)
    if isinstance(items, str) and n.STRING_ITEMS:
        items = [items]
    if not isinstance(items, list):
        return None
    return (request.get(n.SYSTEM_FIELD) if n.SYSTEM_FIELD else None), items


def request_view(protocol: str | None, request: Any) -> ChatView | None:
    """A request body's messages and tools in the chat shape; None when the protocol is
    unknown or the body holds no item list."""
    n = normaliser(protocol)
    split = _split(n, request) if n is not None else None
    if n is None or split is None:
        return None
    messages = n.view(*split)
    tools = n.tools_view(request.get(n.TOOLS_FIELD))
    return ChatView(messages.messages, tools.tools, messages.problems + tools.problems)


def reply_view(protocol: str | None, output: Any, tool_ids: Sequence[str | None] = ()) -> ChatView:
    """The response as chat message(s); `tool_ids` names output tool calls the protocol
    left without an id (Gemini), in output order."""
    n = normaliser(protocol)
    if n is None:
        return ChatView()
    view = n.view(None, n.output_items(output), tool_ids)
    extra = openai_chat.extra_choices(output) if n is openai_chat else 0
    problems = (f"choices_beyond_first:{extra}",) if extra else ()
    return ChatView(view.messages, (), view.problems + problems)


def restore_request(protocol: str, messages: Sequence[ChatMessage]) -> JSONObject:
    """The item list (and system prompt) a chat view came from, in the protocol's shape."""
    n = _NORMALISERS[protocol]
    system, items = n.restore(messages)
    restored: JSONObject = {n.ITEMS_FIELD: items}
    if n.SYSTEM_FIELD and system is not None:
        restored[n.SYSTEM_FIELD] = system
    return restored


def prompt_tokens(
    protocol: str | None, input_tokens: int | None, cache_read: int | None, cache_write: int | None
) -> int | None:
    """All prompt tokens, cached included, from the protocol's normalised counts."""
    n = normaliser(protocol)
    if input_tokens is None:
        return None
    if n is None or n.INPUT_TOKENS_INCLUDE_CACHE:
        return input_tokens
    return input_tokens + (cache_read or 0) + (cache_write or 0)

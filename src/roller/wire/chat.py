"""Every protocol's conversation as OpenAI chat messages: the shared view and its inverse.

Each protocol package's `chat` module declares one `ChatForm` (`CHAT`): how its items,
system prompt and tools read as OpenAI Chat Completions messages and tools (`view`,
`tools_view`), how a view goes back to its items (`restore`), and two usage facts. Its
codec serves it as `Codec.chat`, a `Chat` over the protocol's `Conversation`
(`roller.wire.history`: where the items, system prompt and tools are, the response as
history items), so nothing outside `roller.wire` branches on a protocol to normalise.

A `ChatMessage` is one chat message (`role`, `content`, `tool_calls`, `tool_call_id`,
`reasoning_content`) plus where every piece of it came from in the protocol's own items:
`content_from` (one origin per content part, or one for a string content),
`tool_calls_from` (one per tool call), `reasoning_from` (the reasoning blocks or items
folded into `reasoning_content`), and `envelopes`: each source item without the pieces
that were translated (its role, type, item ids, status, namespace …), so the original
protocol and ids stay alongside the plain chat message.

An origin is `(item, part)`: the index of the item in the protocol's item list
(`SYSTEM` for the system prompt) and the index of the part inside it, or None when the
piece is the item's whole string content (or a whole item, for protocols whose items
are the pieces). `Restorer` puts pieces back by their origins, which is how every
protocol inverts its view, so a round trip never depends on the order the chat format
imposes (tool messages right after the assistant's tool calls).

What survives a round trip (`restore(view(x))`): roles, text exactly, tool calls by id,
name and arguments, tool results by id, error flag and content, images, and every
untranslated part or item verbatim — the same messages by `Codec.item_key`
(`docs/protocol.md`, "The same message"). Not kept: reasoning block boundaries and
signatures, Responses encrypted reasoning, `cache_control` markers, Gemini
`thoughtSignature`s (`docs/exports.md`). Pure; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roller.wire.history import Conversation
from roller.wire.types import JSONObject

if TYPE_CHECKING:
    from roller.wire.item_views import ItemViews

SYSTEM = -1  # the item index of the system prompt (Anthropic `system`, Gemini …)

Origin = tuple[int, int | None]


def _origins(values: Iterable[Origin]) -> list[list[int | None]]:
    return [[item, part] for item, part in values]


@dataclass(frozen=True)
class ChatMessage:
    """One OpenAI chat message and where its pieces came from (module docstring)."""

    message: JSONObject
    content_from: tuple[Origin, ...] = ()
    tool_calls_from: tuple[Origin, ...] = ()
    reasoning_from: tuple[Origin, ...] = ()
    envelopes: tuple[tuple[int, JSONObject], ...] = ()
    # A tool message: its source block or item without the translated fields (the
    # Anthropic `tool_result` with `is_error`, the Responses output item with its ids).
    result_envelope: JSONObject | None = None

    def origin(self) -> JSONObject:
        """The JSON form kept beside the message in exports."""
        out: JSONObject = {}
        if self.content_from:
            out["content"] = _origins(self.content_from)
        if self.tool_calls_from:
            out["tool_calls"] = _origins(self.tool_calls_from)
        if self.reasoning_from:
            out["reasoning"] = _origins(self.reasoning_from)
        if self.envelopes:
            out["envelopes"] = {str(i): e for i, e in self.envelopes}
        if self.result_envelope is not None:
            out["result_envelope"] = self.result_envelope
        return out


@dataclass(frozen=True)
class ChatView:
    """A request's (or a response's) messages and tools in the OpenAI chat shape.

    `problems` are coded, in order: `untranslated_part:<type>` / `untranslated_item:<type>`
    (kept verbatim inside the message, never dropped), `untranslated_tool:<type>`,
    `tool_id_minted` (Gemini named no id: a positional one was given), `choices_beyond_first:N`.
    """

    messages: tuple[ChatMessage, ...] = ()
    tools: tuple[JSONObject, ...] = ()
    problems: tuple[str, ...] = ()

    def plain(self) -> list[JSONObject]:
        return [m.message for m in self.messages]


# One item's chat messages and the problems its reading found (`ChatForm.item`).
ItemMessages = tuple[tuple[ChatMessage, ...], tuple[str, ...]]


def joined(head: ChatView, items: Iterable[ItemMessages]) -> ChatView:
    """`head`'s messages (a system prompt's), then each item's, their problems in order:
    the view of a form whose items read alone (`ChatForm.item`)."""
    messages = list(head.messages)
    problems = list(head.problems)
    for item_messages, item_problems in items:
        messages += item_messages
        problems += item_problems
    return ChatView(messages=tuple(messages), problems=tuple(problems))


def arguments_text(value: Any) -> str:
    """Tool arguments as the chat format's JSON string (a string argument is quoted, so
    `arguments_value` gives back exactly the value the protocol carried)."""
    return json.dumps(value, ensure_ascii=False)


def arguments_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def text_part(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def parse_data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a `data:` URL, else None."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    head, data = url[5:].split(";base64,", 1)
    return head, data


def only_keys(value: Any, allowed: set[str]) -> bool:
    return isinstance(value, dict) and set(value) <= allowed


@dataclass
class MessageBuilder:
    """Collects one chat message's pieces with their origins."""

    role: str
    content: list[JSONObject] = field(default_factory=list)
    content_from: list[Origin] = field(default_factory=list)
    string_content: str | None = None
    tool_calls: list[JSONObject] = field(default_factory=list)
    tool_calls_from: list[Origin] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_from: list[Origin] = field(default_factory=list)
    envelopes: dict[int, JSONObject] = field(default_factory=dict)
    extra: JSONObject = field(default_factory=dict)

    def add_content(self, part: JSONObject, origin: Origin) -> None:
        self.content.append(part)
        self.content_from.append(origin)

    def set_string(self, text: str, origin: Origin) -> None:
        self.string_content = text
        self.content_from.append(origin)

    def add_tool_call(self, call: JSONObject, origin: Origin) -> None:
        self.tool_calls.append(call)
        self.tool_calls_from.append(origin)

    def add_reasoning(self, text: str | None, origin: Origin) -> None:
        if text:
            self.reasoning.append(text)
        self.reasoning_from.append(origin)

    @property
    def empty(self) -> bool:
        return not (self.content_from or self.tool_calls_from or self.reasoning_from)

    def build(self) -> ChatMessage:
        message: JSONObject = {"role": self.role}
        if self.string_content is not None:
            message["content"] = self.string_content
        elif len(self.content) == 1 and self.content[0].get("type") == "text":
            message["content"] = self.content[0]["text"]
        elif self.content:
            message["content"] = list(self.content)
        else:
            message["content"] = None if self.role == "assistant" else ""
        if self.tool_calls:
            message["tool_calls"] = list(self.tool_calls)
        if self.reasoning:
            message["reasoning_content"] = "\n".join(self.reasoning)
        message.update(self.extra)
        return ChatMessage(
            message=message,
            content_from=tuple(self.content_from),
            tool_calls_from=tuple(self.tool_calls_from),
            reasoning_from=tuple(self.reasoning_from),
            envelopes=tuple(sorted(self.envelopes.items())),
        )


def content_pieces(message: JSONObject) -> list[Any]:
    """The content pieces of a chat message, aligned with `content_from`."""
    content = message.get("content")
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [content]
    return []


@dataclass
class Restorer:
    """Puts pieces back at their origins: item -> envelope and part -> value."""

    envelopes: dict[int, JSONObject] = field(default_factory=dict)
    parts: dict[int, dict[int | None, Any]] = field(default_factory=dict)

    def envelope(self, item: int, value: JSONObject) -> None:
        self.envelopes.setdefault(item, dict(value))

    def put(self, origin: Origin, value: Any) -> None:
        item, part = origin
        self.parts.setdefault(item, {})[part] = value

    def items(self) -> list[tuple[int, JSONObject, list[Any] | Any]]:
        """(item, envelope, pieces in part order — or the whole value when part is None)."""
        out: list[tuple[int, JSONObject, list[Any] | Any]] = []
        for item in sorted(set(self.envelopes) | set(self.parts)):
            pieces = self.parts.get(item, {})
            envelope = self.envelopes.get(item, {})
            if None in pieces:
                out.append((item, envelope, pieces[None]))
            else:
                out.append((item, envelope, [pieces[k] for k in sorted(pieces, key=_part_key)]))
        return out


def _part_key(part: int | None) -> int:
    return -1 if part is None else part


def tool_message(
    call_id: Any, content: Any, origin: Origin, item_envelope: JSONObject, result: JSONObject
) -> ChatMessage:
    """A `role: tool` message answering `call_id`; `content` is the result's content."""
    return ChatMessage(
        message={"role": "tool", "tool_call_id": call_id, "content": content},
        content_from=(origin,),
        envelopes=((origin[0], item_envelope),),
        result_envelope=result,
    )


def messages_of(views: Sequence[ChatMessage]) -> list[JSONObject]:
    return [m.message for m in views]


@dataclass(frozen=True)
class PieceWriter:
    """How a protocol whose items are role + parts writes each chat piece back."""

    content: Callable[[Any, int | None], Any]  # a content piece (str or part) at a part index
    tool_call: Callable[[JSONObject], Any]  # a chat tool call
    reasoning: Callable[[str], Any]  # reasoning text (the first origin gets it all)
    tool_result: Callable[[ChatMessage], Any]  # a `tool` message


def restore_pieces(
    messages: Sequence[ChatMessage], writer: PieceWriter
) -> list[tuple[int, JSONObject, list[Any] | Any]]:
    """Every piece of a view put back at its origin, by `writer` (Anthropic, Gemini):
    `Restorer.items()`, the system prompt's item (`SYSTEM`) first."""
    restorer = Restorer()
    for chat in messages:
        _restore_message(restorer, chat, writer)
    return restorer.items()


def _restore_message(restorer: Restorer, chat: ChatMessage, writer: PieceWriter) -> None:
    message = chat.message
    for item, envelope in chat.envelopes:
        restorer.envelope(item, envelope)
    if message.get("role") == "tool":
        restorer.put(chat.content_from[0], writer.tool_result(chat))
        return
    for origin, piece in zip(chat.content_from, content_pieces(message), strict=True):
        restorer.put(origin, writer.content(piece, origin[1]))
    for origin, call in zip(chat.tool_calls_from, message.get("tool_calls") or [], strict=True):
        restorer.put(origin, writer.tool_call(call))
    for n, origin in enumerate(chat.reasoning_from):
        restorer.put(
            origin, writer.reasoning(message.get("reasoning_content", "") if n == 0 else "")
        )


def no_reply_problems(output: Any) -> tuple[str, ...]:
    """A protocol whose response always has one reply."""
    return ()


@dataclass(frozen=True, slots=True)
class ChatForm:
    """How one protocol reads as OpenAI chat: each protocol package's `chat` module
    declares one (`CHAT`) and its codec serves it (`Codec.chat`)."""

    # (system prompt, items, ids for tool calls the protocol left without one) -> view
    view: Callable[[Any, Sequence[Any], Sequence[str | None]], ChatView]
    tools_view: Callable[[Any], ChatView]  # the `tools` value -> chat tools
    restore: Callable[[Sequence[ChatMessage]], tuple[Any, list[Any]]]  # -> (system, items)
    provider: str  # the API, as OpenTelemetry's `gen_ai.provider.name` names it
    input_tokens_include_cache: bool  # whether `Usage.input_tokens` counts cached tokens
    reply_problems: Callable[[Any], tuple[str, ...]] = no_reply_problems
    # Whether each `tool` message (its id and content) comes from its own item alone:
    # the view of that item by itself gives it as the whole list's view does. Not
    # Gemini's, whose results without an id take one from the calls before them.
    results_alone: bool = False
    # One item's messages at its index, from that item and index alone, for a form whose
    # `view` is its system prompt's messages then each item's (`joined`): Anthropic's,
    # Chat's. None where items read together (Responses folds items into one message,
    # Gemini numbers tool ids across items). `ItemViews` remembers them across calls.
    item: Callable[[int, Any], ItemMessages] | None = None


class Chat:
    """A protocol's conversation in the OpenAI chat shape (`Codec.chat`)."""

    def __init__(self, conversation: Conversation, form: ChatForm) -> None:
        self._conversation = conversation
        self._form = form
        self.provider = form.provider
        self.results_alone = form.results_alone

    def request(self, request: Any, remembered: ItemViews | None = None) -> ChatView | None:
        """A request body's messages (its system prompt first) and tools; None when it
        holds no item list. `remembered`: items already viewed in earlier calls are taken
        from it where the form reads items alone, and a `tools` value already viewed (the
        same view, `ItemViews`)."""
        history = self._conversation.history_of(request)
        if history is None:
            return None
        system = self._conversation.system_prompt(history.config)
        if remembered is not None and self._form.item is not None:
            messages = remembered.view(self._form, system, history.items)
        else:
            messages = self._form.view(system, history.items, ())
        if remembered is not None:
            tools = remembered.tools(self._form, history.tools)
        else:
            tools = self._form.tools_view(history.tools)
        return ChatView(messages.messages, tools.tools, messages.problems + tools.problems)

    def reply(self, output: Any, tool_ids: Sequence[str | None] = ()) -> ChatView:
        """The response as chat message(s); `tool_ids` names, in output order, the tool
        calls the protocol left without an id (Gemini)."""
        view = self._form.view(None, self._conversation.output_items(output), tool_ids)
        return ChatView(view.messages, (), view.problems + self._form.reply_problems(output))

    def items(
        self, items: Sequence[Any], system: Any = None, tool_ids: Sequence[str | None] = ()
    ) -> ChatView:
        """The chat messages of some of the protocol's own items (and a system prompt)."""
        return self._form.view(system, items, tool_ids)

    def tools(self, tools: Any) -> ChatView:
        """A `tools` value as chat function tools (untranslatable ones verbatim)."""
        return self._form.tools_view(tools)

    def restore(self, messages: Sequence[ChatMessage]) -> JSONObject:
        """The item list (and system prompt) a view came from, as the request fields."""
        system, items = self._form.restore(messages)
        restored: JSONObject = {self._conversation.items_field: items}
        if self._conversation.system_field and system is not None:
            restored[self._conversation.system_field] = system
        return restored

    def prompt_tokens(
        self, input_tokens: int | None, cache_read: int | None, cache_write: int | None
    ) -> int | None:
        """All prompt tokens, cached included (OpenAI's `prompt_tokens`)."""
        if input_tokens is None or self._form.input_tokens_include_cache:
            return input_tokens
        return input_tokens + (cache_read or 0) + (cache_write or 0)

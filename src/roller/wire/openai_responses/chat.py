"""OpenAI Responses in the OpenAI chat shape, and back (`CHAT`, `roller.wire.chat`).

- `instructions` is one `system` message; a string item (a bare string `input` is one)
  is a user message.
- `message` items keep their role (`developer` included); text parts (`input_text`,
  `output_text`) become `text` parts, `input_image` with an `image_url` an `image_url`.
- Consecutive `reasoning`, assistant `message`, `function_call`, `custom_tool_call` and
  client `tool_search_call` items are one assistant message (the chat format puts text
  and tool calls on one message): `reasoning` summaries fold into `reasoning_content`
  (encrypted reasoning is not kept), calls become `tool_calls` — a namespaced tool's name
  is `namespace.name`, as in the tools list, and the namespace stays in the item's
  envelope; a tool search is a `tool_search` function call whose arguments (an object
  in Responses) are its JSON text, its `execution` kept in the envelope.
- `function_call_output` / `custom_tool_call_output` are `tool` messages.
- Any other item (Codex `agent_message`, provider tool calls such as `web_search_call`)
  is kept verbatim as the one content part of a message (role: its own, else assistant
  for `*_call` items, else user) and named in `problems`.
- Every item's envelope keeps its `type`, `id` (`fc_…`, `msg_…`), `status`, `namespace`.
- Usage: `input_tokens` includes cached tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roller.wire.chat import (
    SYSTEM,
    ChatForm,
    ChatMessage,
    ChatView,
    MessageBuilder,
    arguments_text,
    arguments_value,
    content_pieces,
    only_keys,
    text_part,
    tool_message,
)
from roller.wire.openai_responses.history import RESULT_ITEMS, TEXT_PARTS, item_type
from roller.wire.types import JSONObject

_CALL_FIELDS = {
    "function_call": ("call_id", "name", "arguments"),
    "custom_tool_call": ("call_id", "name", "input"),
    "tool_search_call": ("call_id", "arguments"),
}
_TOOL_SEARCH = "tool_search"


def _part(part: Any) -> JSONObject:
    if (
        only_keys(part, {"type", "text", "annotations", "logprobs"})
        and part.get("type") in TEXT_PARTS
    ):
        return text_part(part["text"])
    if only_keys(part, {"type", "image_url", "detail"}) and part.get("type") == "input_image":
        image: JSONObject = {"url": part.get("image_url")}
        if "detail" in part:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return part if isinstance(part, dict) else {"type": "json", "value": part}


def _without(item: JSONObject, *names: str) -> JSONObject:
    return {k: v for k, v in item.items() if k not in names}


class _Walk:
    """Folds items into chat messages (module docstring), one pass in item order."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.problems: list[str] = []
        self.current: MessageBuilder | None = None

    def close(self) -> None:
        if self.current is not None and (not self.current.empty or self.current.envelopes):
            self.messages.append(self.current.build())
        self.current = None

    def assistant(self, fresh: bool) -> MessageBuilder:
        if self.current is None or fresh:
            self.close()
            self.current = MessageBuilder(role="assistant")
        return self.current

    def message(self, index: int, item: Any) -> None:
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        role = str(item.get("role") or "user")
        if role == "assistant":
            current = self.current
            builder = self.assistant(
                fresh=current is None or bool(current.content_from or current.tool_calls_from)
            )
        else:
            self.close()
            builder = self.current = MessageBuilder(role=role)
        builder.envelopes[index] = _without(item, "content")
        content = item.get("content")
        if isinstance(content, str):
            builder.set_string(content, (index, None))
            return
        for n, part in enumerate(content if isinstance(content, list) else []):
            chat = _part(part)
            if chat is part:
                self.problems.append(f"untranslated_part:{part.get('type')}")
            builder.add_content(chat, (index, n))

    def call(self, index: int, item: JSONObject, kind: str) -> None:
        builder = self.assistant(fresh=False)
        fields = _CALL_FIELDS[kind]
        builder.envelopes[index] = _without(item, *fields)
        namespace = item.get("namespace")
        name = f"{namespace}.{item.get('name')}" if isinstance(namespace, str) else item.get("name")
        if kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": name, "arguments": item.get("arguments")},
            }
        elif kind == "tool_search_call":
            arguments = arguments_text(item.get("arguments"))
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": _TOOL_SEARCH, "arguments": arguments},
            }
        else:
            call = {
                "id": item.get("call_id"),
                "type": "custom",
                "custom": {"name": name, "input": item.get("input")},
            }
        builder.add_tool_call(call, (index, None))

    def reasoning(self, index: int, item: JSONObject) -> None:
        current = self.current
        builder = self.assistant(
            fresh=current is not None and bool(current.content_from or current.tool_calls_from)
        )
        builder.envelopes[index] = _without(item, "summary", "content", "encrypted_content")
        texts = [
            s["text"]
            for s in (item.get("summary") or []) + (item.get("content") or [])
            if isinstance(s, dict) and isinstance(s.get("text"), str)
        ]
        builder.add_reasoning("\n".join(texts) or None, (index, None))

    def result(self, index: int, item: JSONObject) -> None:
        self.close()
        output = item.get("output")
        content = [_part(p) for p in output] if isinstance(output, list) else output
        self.messages.append(
            tool_message(
                item.get("call_id"), content, (index, None), _without(item, "call_id", "output"), {}
            )
        )

    def other(self, index: int, item: Any, kind: str | None) -> None:
        self.close()
        role = item.get("role") if isinstance(item, dict) else None
        if not isinstance(role, str):
            role = "assistant" if (kind or "").endswith("_call") else "user"
        builder = MessageBuilder(role=role)
        builder.add_content(
            item if isinstance(item, dict) else {"type": "json", "value": item}, (index, None)
        )
        self.messages.append(builder.build())
        self.problems.append(f"untranslated_item:{kind or 'unknown'}")

    def item(self, index: int, item: Any) -> None:
        kind = item_type(item)
        if kind == "message":
            self.message(index, item)
        elif kind in _CALL_FIELDS:
            self.call(index, item, kind)
        elif kind == "reasoning":
            self.reasoning(index, item)
        elif kind in RESULT_ITEMS:
            self.result(index, item)
        else:
            self.other(index, item, kind)


def view(system: Any, items: Sequence[Any], tool_ids: Sequence[str | None] = ()) -> ChatView:
    """The chat messages of `instructions` and an input/output item list."""
    walk = _Walk()
    if isinstance(system, str):
        builder = MessageBuilder(role="system")
        builder.set_string(system, (SYSTEM, None))
        walk.messages.append(builder.build())
    for index, item in enumerate(items):
        walk.item(index, item)
    walk.close()
    return ChatView(messages=tuple(walk.messages), problems=tuple(walk.problems))


def _tool(tool: Any, namespace: str | None) -> JSONObject | None:
    if not isinstance(tool, dict):
        return None
    name = f"{namespace}.{tool.get('name')}" if namespace else tool.get("name")
    if tool.get("type") == "function":
        function = {"name": name, **_without(tool, "type", "name")}
        return {"type": "function", "function": function}
    if tool.get("type") == "custom":
        return {"type": "custom", "custom": {"name": name, **_without(tool, "type", "name")}}
    return None


def tools_view(tools: Any) -> ChatView:
    """Function and custom tools (namespaces flattened to `namespace.name`); the rest
    (hosted tools such as `web_search`) verbatim."""
    out: list[JSONObject] = []
    problems: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if (
            isinstance(tool, dict)
            and tool.get("type") == "namespace"
            and isinstance(tool.get("tools"), list)
        ):
            inner = [(_tool(t, str(tool.get("name"))), t) for t in tool["tools"]]
        else:
            inner = [(_tool(tool, None), tool)]
        for chat, raw in inner:
            out.append(
                chat
                if chat is not None
                else raw
                if isinstance(raw, dict)
                else {"type": "json", "value": raw}
            )
            if chat is None:
                problems.append(
                    f"untranslated_tool:{raw.get('type') if isinstance(raw, dict) else 'json'}"
                )
    return ChatView(tools=tuple(out), problems=tuple(problems))


def _restored_part(piece: Any, role: Any) -> Any:
    if isinstance(piece, str):  # a lone text part the view shows as a string content
        piece = text_part(piece)
    if isinstance(piece, dict) and piece.get("type") == "text" and set(piece) == {"type", "text"}:
        return {
            "type": "output_text" if role == "assistant" else "input_text",
            "text": piece["text"],
        }
    if isinstance(piece, dict) and piece.get("type") == "image_url":
        image = piece.get("image_url", {})
        part = {"type": "input_image", "image_url": image.get("url")}
        if "detail" in image:
            part["detail"] = image["detail"]
        return part
    return piece


def _call_fields(call: JSONObject, envelope: JSONObject) -> JSONObject:
    body = call.get("function") if call.get("type") == "function" else call.get("custom")
    body = body if isinstance(body, dict) else {}
    if envelope.get("type") == "tool_search_call":
        return {"call_id": call.get("id"), "arguments": arguments_value(body.get("arguments"))}
    name = body.get("name")
    namespace = envelope.get("namespace")
    if isinstance(namespace, str) and isinstance(name, str) and name.startswith(namespace + "."):
        name = name[len(namespace) + 1 :]
    value_field = "arguments" if call.get("type") == "function" else "input"
    return {"call_id": call.get("id"), "name": name, value_field: body.get(value_field)}


def restore(messages: Sequence[ChatMessage]) -> tuple[Any, list[Any]]:
    """(instructions, input items) back in the Responses shape, from a `view`."""
    envelopes: dict[int, JSONObject] = {}
    fields: dict[int, JSONObject] = {}
    parts: dict[int, dict[int | None, Any]] = {}
    for chat in messages:
        message = chat.message
        envelopes.update(chat.envelopes)
        if message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                content = [_restored_part(p, "user") for p in content]
            fields[chat.content_from[0][0]] = {
                "call_id": message.get("tool_call_id"),
                "output": content,
            }
            continue
        for (item, part), piece in zip(chat.content_from, content_pieces(message), strict=True):
            role = envelopes.get(item, {}).get("role")
            parts.setdefault(item, {})[part] = (
                piece if part is None else _restored_part(piece, role)
            )
        for (item, _), call in zip(
            chat.tool_calls_from, message.get("tool_calls") or [], strict=True
        ):
            fields[item] = _call_fields(call, envelopes.get(item, {}))
        for n, (item, _) in enumerate(chat.reasoning_from):
            text = message.get("reasoning_content") if n == 0 else None
            fields[item] = {"summary": [{"type": "summary_text", "text": text}] if text else []}
    system: Any = None
    items: list[Any] = []
    for item in sorted(set(envelopes) | set(fields) | set(parts)):
        pieces = parts.get(item, {})
        if item == SYSTEM:
            system = pieces.get(None)
        elif item not in envelopes:  # kept verbatim
            items.append(pieces.get(None))
        elif item in fields:
            items.append({**envelopes[item], **fields[item]})
        else:
            content = (
                pieces[None]
                if None in pieces
                else [pieces[k] for k in sorted(pieces, key=lambda p: p or 0)]
            )
            items.append({**envelopes[item], "content": content})
    return system, items


CHAT = ChatForm(
    view,
    tools_view,
    restore,
    provider="openai",
    input_tokens_include_cache=True,
    results_alone=True,  # an output item names its call_id
)

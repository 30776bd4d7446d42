"""Anthropic Messages in the OpenAI chat shape, and back (`CHAT`, `roller.wire.chat`).

- `system` (a string or text blocks) is one `system` message.
- A `user` item's `tool_result` blocks become `tool` messages (first, in order: the chat
  format wants them right after the assistant's tool calls), the rest one `user`
  message. `is_error` and other block fields stay in the tool message's
  `result_envelope`.
- An `assistant` item is one message: text in `content`, `tool_use` as `tool_calls`
  (input as a JSON string), `thinking` folded into `reasoning_content`
  (`redacted_thinking` has no text; signatures are not kept).
- Images (`base64` or `url` sources) become `image_url` parts (a `data:` URL); every
  other block (documents, server tool blocks, …) stays verbatim in the content and is
  named in `problems`. `cache_control` markers are not kept.
- Usage: `input_tokens` excludes cache reads and writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roller.wire.chat import (
    SYSTEM,
    ChatForm,
    ChatMessage,
    ChatView,
    ItemMessages,
    MessageBuilder,
    Origin,
    PieceWriter,
    arguments_text,
    arguments_value,
    data_url,
    joined,
    only_keys,
    parse_data_url,
    restore_pieces,
    text_part,
    tool_message,
)
from roller.wire.types import JSONObject


def _image(block: JSONObject) -> JSONObject | None:
    source = block.get("source")
    if not only_keys(block, {"type", "source", "cache_control"}) or not isinstance(source, dict):
        return None
    if set(source) == {"type", "media_type", "data"} and source["type"] == "base64":
        return {
            "type": "image_url",
            "image_url": {"url": data_url(source["media_type"], source["data"])},
        }
    if set(source) == {"type", "url"} and source["type"] == "url":
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    return None


def _add_block(builder: MessageBuilder, block: Any, origin: Origin, problems: list[str]) -> None:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        builder.add_content(text_part(block["text"]), origin)
    elif kind == "thinking":
        builder.add_reasoning(
            block.get("thinking") if isinstance(block.get("thinking"), str) else None, origin
        )
    elif kind == "redacted_thinking":
        builder.add_reasoning(None, origin)
    elif kind == "tool_use" and builder.role == "assistant":
        builder.add_tool_call(
            {
                "id": block.get("id"),
                "type": "function",
                "function": {
                    "name": block.get("name"),
                    "arguments": arguments_text(block.get("input")),
                },
            },
            origin,
        )
    elif kind == "image" and (image := _image(block)) is not None:
        builder.add_content(image, origin)
    else:
        builder.add_content(
            block if isinstance(block, dict) else {"type": "json", "value": block}, origin
        )
        problems.append(f"untranslated_part:{kind or type(block).__name__}")


def _item(index: int, item: Any, problems: list[str]) -> list[ChatMessage]:
    if not isinstance(item, dict):
        problems.append("untranslated_item:not_an_object")
        builder = MessageBuilder(role="user")
        builder.add_content({"type": "json", "value": item}, (index, None))
        return [builder.build()]
    role = str(item.get("role") or "user")
    envelope = {k: v for k, v in item.items() if k != "content"}
    builder = MessageBuilder(role=role, envelopes={index: envelope})
    content = item.get("content")
    if isinstance(content, str):
        builder.set_string(content, (index, None))
        return [builder.build()]
    tools: list[ChatMessage] = []
    for part, block in enumerate(content if isinstance(content, list) else []):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            result = {k: v for k, v in block.items() if k not in ("tool_use_id", "content")}
            inner = block.get("content", "")
            tools.append(
                tool_message(
                    block.get("tool_use_id"),
                    _result_content(inner),
                    (index, part),
                    envelope,
                    result,
                )
            )
        else:
            _add_block(builder, block, (index, part), problems)
    return tools + ([builder.build()] if not builder.empty or not tools else [])


def _result_content(inner: Any) -> Any:
    if not isinstance(inner, list):
        return inner
    out = []
    for block in inner:
        if only_keys(block, {"type", "text", "cache_control"}) and block.get("type") == "text":
            out.append(text_part(block["text"]))
        elif isinstance(block, dict) and block.get("type") == "image" and (image := _image(block)):
            out.append(image)
        else:
            out.append(block)
    if len(out) == 1 and out[0].get("type") == "text":
        return out[0]["text"]  # the same message as a one-text-block list, and plainer
    return out


def item_messages(index: int, item: Any) -> ItemMessages:
    """One item's messages, read alone (`ChatForm.item`)."""
    problems: list[str] = []
    return tuple(_item(index, item, problems)), tuple(problems)


def _system(system: Any) -> ChatView:
    problems: list[str] = []
    if isinstance(system, str):
        builder = MessageBuilder(role="system")
        builder.set_string(system, (SYSTEM, None))
        return ChatView(messages=(builder.build(),))
    if isinstance(system, list):
        builder = MessageBuilder(role="system")
        for part, block in enumerate(system):
            _add_block(builder, block, (SYSTEM, part), problems)
        return ChatView(messages=(builder.build(),), problems=tuple(problems))
    return ChatView()


def view(system: Any, items: Sequence[Any], tool_ids: Sequence[str | None] = ()) -> ChatView:
    """The chat messages of a system prompt and item list, each item read alone
    (`tool_ids` is unused: every Anthropic `tool_use` names its id)."""
    return joined(_system(system), (item_messages(i, item) for i, item in enumerate(items)))


def tools_view(tools: Any) -> ChatView:
    """Client tools as chat `function` tools; server tools stay verbatim."""
    out: list[JSONObject] = []
    problems: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if (
            isinstance(tool, dict)
            and "input_schema" in tool
            and tool.get("type") in (None, "custom")
        ):
            function: JSONObject = {"name": tool.get("name"), "parameters": tool["input_schema"]}
            if "description" in tool:
                function["description"] = tool["description"]
            out.append({"type": "function", "function": function})
        else:
            out.append(tool if isinstance(tool, dict) else {"type": "json", "value": tool})
            problems.append(
                f"untranslated_tool:{tool.get('type') if isinstance(tool, dict) else 'json'}"
            )
    return ChatView(tools=tuple(out), problems=tuple(problems))


def _block_of(piece: Any, part: int | None) -> Any:
    if isinstance(piece, str):
        return piece if part is None else {"type": "text", "text": piece}
    if isinstance(piece, dict) and piece.get("type") == "image_url":
        url = str(piece.get("image_url", {}).get("url", ""))
        parsed = parse_data_url(url)
        source = (
            {"type": "base64", "media_type": parsed[0], "data": parsed[1]}
            if parsed
            else {"type": "url", "url": url}
        )
        return {"type": "image", "source": source}
    if isinstance(piece, dict) and piece.get("type") == "json" and set(piece) == {"type", "value"}:
        return piece["value"]
    return piece


def _tool_result(chat: ChatMessage) -> JSONObject:
    content = chat.message.get("content")
    if isinstance(content, list):
        content = [_block_of(p, 0) for p in content]
    block = {
        "type": "tool_result",
        "tool_use_id": chat.message.get("tool_call_id"),
        "content": content,
    }
    block.update(chat.result_envelope or {})
    return block


def _tool_use(call: JSONObject) -> JSONObject:
    function = call.get("function", {})
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": arguments_value(function.get("arguments")),
    }


_WRITER = PieceWriter(
    content=_block_of,
    tool_call=_tool_use,
    reasoning=lambda text: {"type": "thinking", "thinking": text},
    tool_result=_tool_result,
)


def restore(messages: Sequence[ChatMessage]) -> tuple[Any, list[Any]]:
    """(system, items) back in the Anthropic shape, from a `view`."""
    system: Any = None
    items: list[Any] = []
    for item, envelope, pieces in restore_pieces(messages, _WRITER):
        if item == SYSTEM:
            system = pieces
            continue
        restored = dict(envelope)
        restored.setdefault("role", "user")
        restored["content"] = pieces
        items.append(restored)
    return system, items


CHAT = ChatForm(
    view,
    tools_view,
    restore,
    provider="anthropic",
    input_tokens_include_cache=False,
    results_alone=True,  # a tool_result block names its tool_use_id
    item=item_messages,
)

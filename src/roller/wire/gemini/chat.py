"""Gemini `generateContent` in the OpenAI chat shape, and back (`CHAT`, `roller.wire.chat`).

- `systemInstruction` is one `system` message; a `model` content is an `assistant`
  message, any other role (`user`, `function`) a `user` message, its role kept in the
  envelope.
- `text` parts are text (`thought: true` ones fold into `reasoning_content`);
  `inlineData` images are `image_url` parts (a `data:` URL); other parts stay verbatim
  and are named in `problems`. `thoughtSignature`s are not kept.
- `functionCall` parts are `tool_calls` (args as a JSON string). Gemini's API usually
  names no id: the id is the part's own, else the one the caller passes in `tool_ids`
  (for an output: the ids the harness assigned, `tool_refs.emitted[].ref`), else the id
  of the `functionResponse` answering it in the next content (same name, same position
  among that name's responses), else a positional `<name>#<item>.<part>`
  (`tool_id_minted` in `problems`).
- `functionResponse` parts are `tool` messages whose content is the response object as
  JSON text; a response without an id answers the call of the previous model content
  at the same position among those with its name (Gemini's pairing), else gets a
  positional id too. The function name stays in the `result_envelope`.
- Usage: `promptTokenCount` includes cached content.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from roller.wire.chat import (
    SYSTEM,
    ChatForm,
    ChatMessage,
    ChatView,
    MessageBuilder,
    Origin,
    PieceWriter,
    arguments_text,
    arguments_value,
    data_url,
    parse_data_url,
    restore_pieces,
    text_part,
    tool_message,
)
from roller.wire.types import JSONObject


class _Ids:
    """Tool-call ids: the part's own, the caller's, or positional (module docstring)."""

    def __init__(self, given: Sequence[str | None], items: Sequence[Any]) -> None:
        self.given: Iterator[str | None] = iter(given)
        self.items = items
        self.last_calls: list[tuple[str | None, str]] = []  # (name, id) of the last model content
        self.minted = False

    def _answer(self, origin: Origin, name: Any, position: int) -> str | None:
        """The id of the response to this call in the next content, when it names one."""
        following = self.items[origin[0] + 1] if origin[0] + 1 < len(self.items) else None
        parts = following.get("parts") if isinstance(following, dict) else None
        answers = [
            p["functionResponse"].get("id")
            for p in (parts if isinstance(parts, list) else [])
            if isinstance(p, dict)
            and isinstance(p.get("functionResponse"), dict)
            and p["functionResponse"].get("name") == name
        ]
        found = answers[position] if position < len(answers) else None
        return found if isinstance(found, str) and found else None

    def call(self, call: JSONObject, origin: Origin, position: int) -> str:
        own = call.get("id")
        given = next(self.given, None)
        if isinstance(own, str) and own:
            return own
        if given:
            return given
        answer = self._answer(origin, call.get("name"), position)
        if answer is not None:
            return answer
        self.minted = True
        return f"{call.get('name')}#{origin[0]}.{origin[1]}"

    def response(self, response: JSONObject, position: int, origin: Origin) -> str:
        own = response.get("id")
        if isinstance(own, str) and own:
            return own
        same = [i for name, i in self.last_calls if name == response.get("name")]
        if position < len(same):
            return same[position]
        self.minted = True
        return f"{response.get('name')}#{origin[0]}.{origin[1]}"


def _add_part(builder: MessageBuilder, part: Any, origin: Origin, problems: list[str]) -> None:
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        if part.get("thought") is True:
            builder.add_reasoning(part["text"], origin)
        else:
            builder.add_content(text_part(part["text"]), origin)
        return
    inline = part.get("inlineData") if isinstance(part, dict) else None
    if (
        isinstance(inline, dict)
        and set(part) <= {"inlineData"}
        and set(inline) == {"mimeType", "data"}
        and str(inline["mimeType"]).startswith("image/")
    ):
        url = data_url(inline["mimeType"], inline["data"])
        builder.add_content({"type": "image_url", "image_url": {"url": url}}, origin)
        return
    builder.add_content(part if isinstance(part, dict) else {"type": "json", "value": part}, origin)
    kind = next(iter(part), "empty") if isinstance(part, dict) else "json"
    problems.append(f"untranslated_part:{kind}")


def _content(index: int, item: Any, ids: _Ids, problems: list[str]) -> list[ChatMessage]:
    item = item if isinstance(item, dict) else {"parts": [item]}
    role = "assistant" if item.get("role") == "model" else "user"
    envelope = {k: v for k, v in item.items() if k != "parts"}
    builder = MessageBuilder(role=role, envelopes={index: envelope})
    tools: list[ChatMessage] = []
    calls: list[tuple[str | None, str]] = []
    seen: dict[Any, int] = {}
    parts = item.get("parts")
    for n, part in enumerate(parts if isinstance(parts, list) else []):
        call = part.get("functionCall") if isinstance(part, dict) else None
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(call, dict) and role == "assistant":
            position = sum(1 for name, _ in calls if name == call.get("name"))
            call_id = ids.call(call, (index, n), position)
            calls.append((call.get("name"), call_id))
            function = {"name": call.get("name"), "arguments": arguments_text(call.get("args", {}))}
            builder.add_tool_call(
                {"id": call_id, "type": "function", "function": function}, (index, n)
            )
        elif isinstance(response, dict):
            position = seen.get(response.get("name"), 0)
            seen[response.get("name")] = position + 1
            call_id = ids.response(response, position, (index, n))
            content = json.dumps(response.get("response"), ensure_ascii=False)
            result = {k: v for k, v in response.items() if k not in ("id", "response")}
            tools.append(tool_message(call_id, content, (index, n), envelope, result))
        else:
            _add_part(builder, part, (index, n), problems)
    if role == "assistant":
        ids.last_calls = calls
    return tools + ([builder.build()] if not builder.empty or not tools else [])


def view(system: Any, items: Sequence[Any], tool_ids: Sequence[str | None] = ()) -> ChatView:
    """The chat messages of a `systemInstruction` and a `contents` list."""
    problems: list[str] = []
    messages: list[ChatMessage] = []
    if isinstance(system, dict) and isinstance(system.get("parts"), list):
        envelope = {k: v for k, v in system.items() if k != "parts"}
        builder = MessageBuilder(role="system", envelopes={SYSTEM: envelope})
        for n, part in enumerate(system["parts"]):
            _add_part(builder, part, (SYSTEM, n), problems)
        messages.append(builder.build())
    ids = _Ids(tool_ids, items)
    for index, item in enumerate(items):
        messages.extend(_content(index, item, ids, problems))
    if ids.minted:
        problems.append("tool_id_minted")
    return ChatView(messages=tuple(messages), problems=tuple(problems))


def tools_view(tools: Any) -> ChatView:
    """`functionDeclarations` as chat function tools; other tools (`googleSearch`,
    `codeExecution`) verbatim."""
    out: list[JSONObject] = []
    problems: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        if not isinstance(declarations, list):
            out.append(tool if isinstance(tool, dict) else {"type": "json", "value": tool})
            kind = next(iter(tool), "empty") if isinstance(tool, dict) else "json"
            problems.append(f"untranslated_tool:{kind}")
            continue
        for declaration in declarations:
            function = {k: v for k, v in declaration.items() if k not in ("parametersJsonSchema",)}
            if "parametersJsonSchema" in declaration and "parameters" not in declaration:
                function["parameters"] = declaration["parametersJsonSchema"]
            out.append({"type": "function", "function": function})
    return ChatView(tools=tuple(out), problems=tuple(problems))


def _part_of(piece: Any, part: int | None) -> Any:
    if isinstance(piece, str):
        return {"text": piece}
    if isinstance(piece, dict) and piece.get("type") == "text" and set(piece) == {"type", "text"}:
        return {"text": piece["text"]}
    if isinstance(piece, dict) and piece.get("type") == "image_url":
        parsed = parse_data_url(str(piece.get("image_url", {}).get("url", "")))
        if parsed is not None:
            return {"inlineData": {"mimeType": parsed[0], "data": parsed[1]}}
    if isinstance(piece, dict) and piece.get("type") == "json" and set(piece) == {"type", "value"}:
        return piece["value"]
    return piece


def _response(chat: ChatMessage) -> JSONObject:
    response = {
        "id": chat.message.get("tool_call_id"),
        **(chat.result_envelope or {}),
        "response": arguments_value(chat.message.get("content")),
    }
    return {"functionResponse": response}


def _function_call(call: JSONObject) -> JSONObject:
    function = call.get("function", {})
    args = arguments_value(function.get("arguments"))
    return {"functionCall": {"id": call.get("id"), "name": function.get("name"), "args": args}}


_WRITER = PieceWriter(
    content=_part_of,
    tool_call=_function_call,
    reasoning=lambda text: {"text": text, "thought": True},
    tool_result=_response,
)


def restore(messages: Sequence[ChatMessage]) -> tuple[Any, list[Any]]:
    """(systemInstruction, contents) back in the Gemini shape, from a `view`."""
    system: Any = None
    items: list[Any] = []
    for item, envelope, pieces in restore_pieces(messages, _WRITER):
        restored = {**envelope, "parts": pieces if isinstance(pieces, list) else [pieces]}
        if item == SYSTEM:
            system = restored
        else:
            items.append(restored)
    return system, items


CHAT = ChatForm(view, tools_view, restore, provider="gcp.gemini", input_tokens_include_cache=True)

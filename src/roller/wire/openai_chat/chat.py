"""OpenAI Chat Completions in the OpenAI chat shape: the items already are chat messages
(`CHAT`, `roller.wire.chat`).

Each item is kept exactly as sent (system messages included: Chat has no separate
system prompt), so the view is the identity and `restore` gives the items back
unchanged. The reply is `choices[0].message`; further choices are named in `problems`.
Usage: `prompt_tokens` includes cached tokens.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from roller.wire.chat import ChatForm, ChatMessage, ChatView, ItemMessages, joined
from roller.wire.types import JSONObject


def _extra_choices(output: Any) -> tuple[str, ...]:
    """The reply is the first choice; the others are named, not shown."""
    choices = output.get("choices") if isinstance(output, dict) else None
    extra = len(choices) - 1 if isinstance(choices, list) else 0
    return (f"choices_beyond_first:{extra}",) if extra > 0 else ()


def _message(index: int, item: Any) -> ChatMessage:
    message = copy.deepcopy(item) if isinstance(item, dict) else {"role": "user", "content": item}
    content = message.get("content")
    parts = len(content) if isinstance(content, list) else 1 if isinstance(content, str) else 0
    calls = message.get("tool_calls")
    return ChatMessage(
        message=message,
        content_from=tuple((index, p if isinstance(content, list) else None) for p in range(parts)),
        tool_calls_from=tuple(
            (index, n) for n in range(len(calls) if isinstance(calls, list) else 0)
        ),
    )


def item_messages(index: int, item: Any) -> ItemMessages:
    """One item's message (`ChatForm.item`): the item itself."""
    return (_message(index, item),), ()


def view(system: Any, items: Sequence[Any], tool_ids: Sequence[str | None] = ()) -> ChatView:
    """The items themselves (`system` is always None for Chat; `tool_ids` unused)."""
    return joined(ChatView(), (item_messages(i, item) for i, item in enumerate(items)))


def tools_view(tools: Any) -> ChatView:
    out: list[JSONObject] = []
    problems: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        out.append(
            copy.deepcopy(tool) if isinstance(tool, dict) else {"type": "json", "value": tool}
        )
        if not (isinstance(tool, dict) and tool.get("type") in ("function", "custom")):
            problems.append(
                f"untranslated_tool:{tool.get('type') if isinstance(tool, dict) else 'json'}"
            )
    return ChatView(tools=tuple(out), problems=tuple(problems))


def restore(messages: Sequence[ChatMessage]) -> tuple[Any, list[Any]]:
    return None, [copy.deepcopy(m.message) for m in messages]


CHAT = ChatForm(
    view,
    tools_view,
    restore,
    "openai",
    input_tokens_include_cache=True,
    reply_problems=_extra_choices,
    results_alone=True,  # a tool message is an item
    item=item_messages,
)

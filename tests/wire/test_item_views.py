"""`ItemViews` gives each form's own view, reading an item once per conversation.

Over every checked-in real run (Claude Code and the other Anthropic harnesses, OpenCode's
Chat, Codex's Responses, Gemini CLI's Gemini), each call's request is viewed with and
without the items remembered, from contexts read once per conversation
(`iter_calls_shared`) and apart (`iter_calls`): the views are equal, and an item is read
only the first time its object comes at its place.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest

from roller.capture.models import CallRecord
from roller.capture.reader import iter_calls, iter_calls_shared
from roller.wire import codec_named
from roller.wire.anthropic import chat as anthropic_chat
from roller.wire.anthropic.chat import CHAT as ANTHROPIC
from roller.wire.item_views import ItemViews
from roller.wire.openai_chat.chat import CHAT as OPENAI_CHAT
from roller.wire.openai_responses.chat import CHAT as RESPONSES
from tests.export.real_captures import RealCaptures


class Counted:
    """The Anthropic items read (`_item`, which its `item` and `view` read each with)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[Any] = []
        real = anthropic_chat._item

        def item(index: int, value: Any, problems: list[str]) -> Any:
            self.read.append(value)
            return real(index, value, problems)

        monkeypatch.setattr(anthropic_chat, "_item", item)


def _views(calls: list[CallRecord], remembered: ItemViews | None) -> list[Any]:
    out = []
    for call in calls:
        codec = codec_named(call.protocol)
        out.append(codec.chat.request(call.context, remembered) if codec else None)
    return out


def test_every_real_capture_views_the_same_with_items_remembered(
    real_captures: RealCaptures,
) -> None:
    protocols = set()
    for capture in real_captures.values():
        shared = list(iter_calls_shared(capture.paths))
        apart = list(iter_calls(capture.paths))
        assert shared == apart  # the same records, read once per conversation
        plain = _views(apart, None)
        assert _views(shared, ItemViews()) == plain
        assert _views(apart, ItemViews()) == plain
        protocols |= {c.protocol for c in shared if c.protocol}
    assert {
        "anthropic-messages",
        "openai-chat-completions",
        "openai-responses",
        "gemini",
    } <= protocols


def test_an_item_is_read_once_where_contexts_share_it(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    capture = real_captures["claude-code", "parallel"]
    shared = [c for c in iter_calls_shared(capture.paths) if c.protocol == "anthropic-messages"]
    items = [m for c in shared for m in c.context["messages"]]
    distinct = {id(m) for m in items}
    assert len(distinct) < len(items)  # conversations resent their transcripts
    counted = Counted(monkeypatch)
    views = _views(shared, ItemViews())
    assert len(counted.read) == len(distinct)
    # a resent `tools` value is viewed once: its chat tools are the same objects
    by_tools: dict[int, Any] = {}
    for call, view in zip(shared, views, strict=True):
        first = by_tools.setdefault(id(call.context["tools"]), view.tools)
        assert all(map(operator.is_, view.tools, first))
    assert len(by_tools) < len(shared)
    # contexts parsed apart share no item: each is read every time, as without it
    counted.read.clear()
    apart = [c for c in iter_calls(capture.paths) if c.protocol == "anthropic-messages"]
    _views(apart, ItemViews())
    assert len(counted.read) == len(items)


def test_only_the_same_objects_at_the_same_places_are_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    b = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "N", "input": {"x": 1}}],
    }
    b_again = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "N", "input": {"x": 1.0}}],
    }
    c = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    counted = Counted(monkeypatch)
    views = ItemViews()
    for system, items, read in [
        ("s", [a, b], [a, b]),
        ("s", [a, b, c], [c]),  # the earlier list's objects: only the new one read
        ("t", [a, b, c, a], [a]),  # the system prompt is the view's own, never kept
        ("s", [a, b_again, c], [b_again, c]),  # an equal item, not the same object
        ("s", [b, c], [b, c]),  # the same objects at other places
    ]:
        expected = ANTHROPIC.view(system, items, ())
        counted.read.clear()
        assert views.view(ANTHROPIC, system, items) == expected
        assert counted.read == read
    # another form does not take what this one made of the same objects
    chat_items = [{"role": "user", "content": "hi"}]
    assert views.view(OPENAI_CHAT, None, chat_items) == OPENAI_CHAT.view(None, chat_items, ())
    expected = ANTHROPIC.view(None, chat_items, ())
    counted.read.clear()
    assert views.view(ANTHROPIC, None, chat_items) == expected
    assert counted.read == chat_items


def test_a_form_whose_items_read_together_is_refused() -> None:
    assert RESPONSES.item is None
    with pytest.raises(ValueError, match="reads its items together"):
        ItemViews().view(RESPONSES, None, [])

"""Tool results as the HTML viewer shows them under the tool call that asked for them.

A tool call's result is the content of the first `tool` message, in sequence order, of a
call's input (its OpenAI chat form, `Codec.chat`) that carries the tool call's id: the
input of a later call than the one whose output made the call. `Answers.add(call)` gives
the results a call's input carries that no earlier call's did, as the page writes them:
in one pass over the calls, into a results table of their own that the viewer looks
each tool call's id up in (the call that made a tool call is written before the result
is seen). Memory: the ids seen, and for a protocol whose results come from their own
items alone (`ChatForm.results_alone`), a digest per distinct item — a conversation
resends its transcript every turn, and only the items not seen before are viewed.
"""

from __future__ import annotations

from typing import Any

from roller.capture.models import CallRecord
from roller.view.page_json import Keyed
from roller.wire import Codec
from roller.wire.types import JSONObject


class Answers:
    """The tool results of the calls added so far, each given once (by the first call
    whose input carries it)."""

    def __init__(self) -> None:
        self._ids: set[str] = set()  # tool-call ids whose result was given
        self._seen: dict[str, set[bytes]] = {}  # protocol -> keys of the items viewed

    def add(
        self, call: CallRecord, codec: Codec | None, items: list[Keyed]
    ) -> list[tuple[str, Any]]:
        """(tool-call id, result) for each result `call`'s input (`items`: its history's,
        keyed) carries that no earlier call's input did."""
        if codec is None:
            return []
        if not codec.chat.results_alone:
            view = codec.chat.request(call.context)
            return self._new(view.plain() if view else [])
        seen = self._seen.setdefault(codec.name, set())
        found: list[tuple[str, Any]] = []
        for item in items:
            # An item seen before gave its results then: only new items are viewed.
            if item.key not in seen:
                seen.add(item.key)
                found += self._new(codec.chat.items([item.value]).plain())
        return found

    def _new(self, messages: list[JSONObject]) -> list[tuple[str, Any]]:
        found = []
        for message in messages:
            tool_id = message.get("tool_call_id")
            if message.get("role") != "tool" or not isinstance(tool_id, str):
                continue
            if tool_id in self._ids:
                continue
            self._ids.add(tool_id)
            found.append((tool_id, message.get("content")))
        return found

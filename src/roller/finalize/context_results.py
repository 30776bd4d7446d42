"""The tool results a request's context carries, read once per message across a conversation.

A harness resends its whole transcript on every call, and `ContextReader` (which parses
finalize's request bodies) gives the next call's transcript as a new list whose first
elements are the earlier call's message objects themselves. `ContextResults.of(codec,
context)` is exactly `codec.context_tool_results(context)`; for a context of
a codec that reads results message by message (`Codec.results_by_message`: Anthropic
Messages) whose `messages` begin with some of the very message objects of a recent
context (what `ContextReader` gives: all of them, or all but the last few, which
Claude Code sends again changed), it reads only the messages after those and appends
their results to those of the recent context's results that came from them.

Why that is the same list: an Anthropic tool result comes from one `tool_result` block
of one message, and its `message_index` is that message's position in `messages`
(`roller.wire.anthropic.codec`), in the order of the messages; the messages before are
at the same positions, and no reader of a context changes it. The new messages are
read by the codec itself, as the `messages` of a request of their own, and their
positions shifted by the prefix's length. Other codecs take their full walk. A few
recent contexts are kept (subagents' conversations interleave): memory is bounded by
`KEEP`, not by the capture.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any, NamedTuple

from roller.wire.item_views import shared_count
from roller.wire.types import Codec, ToolResult

KEEP = 8


class _Kept(NamedTuple):
    messages: list[Any]  # the recent context's `messages`, held so their ids stay theirs
    results: tuple[ToolResult, ...]


class ContextResults:
    def __init__(self) -> None:
        self._recent: deque[_Kept] = deque(maxlen=KEEP)

    def of(self, codec: Codec, context: Any) -> tuple[ToolResult, ...]:
        """`codec.context_tool_results(context)`, reading only new messages (above)."""
        messages = context.get("messages") if isinstance(context, dict) else None
        if not codec.results_by_message or not isinstance(messages, list) or not messages:
            return tuple(codec.context_tool_results(context))
        for kept in self._recent:
            start = shared_count(kept.messages, messages)
            if start:
                self._recent.remove(kept)
                added = codec.context_tool_results({"messages": messages[start:]})
                before = kept.results
                if start < len(kept.messages):  # (its last messages were sent again changed)
                    before = tuple(r for r in before if r.message_index < start)
                results = before + tuple(
                    replace(r, message_index=r.message_index + start) for r in added
                )
                break
        else:
            results = tuple(codec.context_tool_results(context))
        self._recent.appendleft(_Kept(messages, results))
        return results

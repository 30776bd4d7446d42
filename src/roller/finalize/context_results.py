"""The tool results a request's context carries, read once per message across a conversation.

A harness resends its whole transcript on every call, and `ContextReader` (which parses
finalize's request bodies) gives the next call's transcript as a new list whose first
elements are the earlier call's message objects themselves. `ContextResults.of(codec,
context)` is exactly `codec.context_tool_results(context)`; for a context of
a codec that reads results message by message (`Codec.results_by_message`: Anthropic
Messages) whose `messages` begin with the messages of a recent context (equal,
and the last of them the very same object: what `ContextReader` gives), it reads only
the messages after them and appends their results to the recent context's.

Why that is the same list: an Anthropic tool result comes from one `tool_result` block
of one message, and its `message_index` is that message's position in `messages`
(`roller.wire.anthropic.codec`); the messages before are at the same positions, and no
reader of a context changes it. The new messages are read by the codec itself, as the
`messages` of a request of their own, and their positions shifted by the prefix's
length. Other codecs take their full walk. A few recent contexts are kept
(subagents' conversations interleave): memory is bounded by `KEEP`, not by the capture.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any, NamedTuple

from roller.wire.types import Codec, ToolResult

KEEP = 8


class _Kept(NamedTuple):
    messages: list[Any]  # the recent context's `messages`, held so their ids stay theirs
    results: tuple[ToolResult, ...]


def _prefix(kept: list[Any], messages: list[Any]) -> bool:
    if not kept or len(kept) > len(messages) or messages[len(kept) - 1] is not kept[-1]:
        return False
    # the list comparison takes an identical element as equal without reading it, and
    # equal messages carry equal results anyway
    return messages[: len(kept)] == kept


class ContextResults:
    def __init__(self) -> None:
        self._recent: deque[_Kept] = deque(maxlen=KEEP)

    def of(self, codec: Codec, context: Any) -> tuple[ToolResult, ...]:
        """`codec.context_tool_results(context)`, reading only new messages (above)."""
        messages = context.get("messages") if isinstance(context, dict) else None
        if not codec.results_by_message or not isinstance(messages, list) or not messages:
            return tuple(codec.context_tool_results(context))
        for kept in self._recent:
            if _prefix(kept.messages, messages):
                self._recent.remove(kept)
                start = len(kept.messages)
                added = codec.context_tool_results({"messages": messages[start:]})
                results = kept.results + tuple(
                    replace(r, message_index=r.message_index + start) for r in added
                )
                break
        else:
            results = tuple(codec.context_tool_results(context))
        self._recent.appendleft(_Kept(messages, results))
        return results

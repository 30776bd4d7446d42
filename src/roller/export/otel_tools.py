"""An agent's `execute_tool` spans (`roller export otel`), from its calls in sequence order.

`AgentTools.see(call)` takes an agent's calls one at a time: each tool call its output
emits waits for the agent's first later call whose input carries its result (that
call's request is where the tool span ends), so the calls need not be held; with
`strict`, a call out of sequence order raises `OutOfOrder` (the export then holds and
sorts them). With content, a tool call's arguments (from its output) and result (from
the answering input) are kept with it (`roller.export.otel_content`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roller.capture.models import CallRecord
from roller.export.otel_content import (
    reply_messages,
    request_messages,
    tool_arguments,
    tool_result,
)
from roller.export.otel_spans import KIND_INTERNAL, Span, call_times, derived_id, unix_ns


class OutOfOrder(Exception):
    """An agent's calls are not in sequence order in calls.jsonl: they are held and sorted."""


@dataclass(slots=True)
class _Emitted:
    """A tool call an agent's output emitted, waiting for the later call carrying its
    result (`answered`: that call's id and its request's time), then an `execute_tool`
    span. Held until the agent's spans are made: its tool's name, not its record."""

    call_id: str
    name: str | None
    tool_id: str
    emitted_at: int
    content: dict[str, str]
    answered: tuple[str, int | None] | None = None


class AgentTools:
    """One agent's `execute_tool` spans, its calls seen in sequence order (`see`; with
    `strict`, a call out of that order raises `OutOfOrder`): a tool call ends at the
    request of the agent's first later call whose input carries its result. What is
    held is each tool call (and with content, its arguments and result), not the calls."""

    def __init__(self, content: bool, strict: bool) -> None:
        self.content = content
        self.strict = strict
        self.emitted: list[_Emitted] = []
        self.waiting: dict[str, list[_Emitted]] = {}
        self.last: int | None = None  # the sequence of the last call seen

    def see(self, call: CallRecord) -> None:
        if self.strict and self.last is not None and call.sequence <= self.last:
            raise OutOfOrder
        self.last = call.sequence
        results = {r.id for r in call.tool_refs.results}
        answers = [t for t in self.waiting if t in results]
        if answers:
            received = unix_ns(call.request.received_at)
            request = request_messages(call) if self.content else []
            for answered in answers:
                for emitted in self.waiting.pop(answered):
                    emitted.answered = (call.call_id, received)
                    if self.content:
                        emitted.content.update(tool_result(request, answered))
        _, emitted_at = call_times(call, 0)
        reply = reply_messages(call) if self.content and call.tool_refs.emitted else []
        for tool in call.tool_refs.emitted:
            tool_id = tool.id or tool.ref
            if tool_id is None:
                continue
            args = tool_arguments(reply, tool_id) if self.content else {}
            emitted = _Emitted(call.call_id, tool.name, tool_id, emitted_at, args)
            self.emitted.append(emitted)
            self.waiting.setdefault(tool_id, []).append(emitted)

    def spans(self, scope: str, agent_span: str) -> dict[str, Span]:
        """tool-call id -> its span (a repeated id: the last one's, in the first one's place)."""
        spans: dict[str, Span] = {}
        for e in self.emitted:
            answered = e.answered
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": e.name,
                "gen_ai.tool.call.id": e.tool_id,
                "gen_ai.tool.type": "function",
                "roller.tool.emitted_by_call_id": e.call_id,
                "roller.tool.result_seen": answered is not None,
                "roller.tool.result_call_id": answered[0] if answered else None,
                **e.content,
            }
            spans[e.tool_id] = Span(
                span_id=derived_id(scope, "tool", e.call_id, e.tool_id, length=16),
                name=f"execute_tool {e.name}",
                kind=KIND_INTERNAL,
                start=e.emitted_at,
                end=(answered[1] or e.emitted_at) if answered else e.emitted_at,
                parent=agent_span,
                attributes=attrs,
            )
        return spans

"""`roller export otel PATH -o spans.jsonl`: OTLP JSON lines of GenAI spans.

One line per attempt in the OpenTelemetry file-exporter format (a `TracesData` JSON
object: `resourceSpans` → `scopeSpans` → `spans`; ids as hex, times as nanosecond
strings, enums as integers), following the GenAI semantic conventions:
- an `invoke_agent {name}` span per participant (`gen_ai.agent.id` = participant id):
  the root's has no parent; a child's parent is the `execute_tool` span of the tool
  call its established `spawn` relation names, else its parent agent's span;
- a `chat {model}` span per attributed call under its agent's span (`gen_ai.provider.name`
  from the protocol, request/response model, response id, finish reasons, `gen_ai.usage.*`
  with input tokens counting cache reads, `cache_read` / `cache_creation` input
  tokens); unattributed calls are top-level `chat` spans of the trace, outside the tree;
- an `execute_tool {name}` span per tool call an output emitted, under the agent's span,
  with `gen_ai.tool.call.id`: from the end of the emitting response to the request of
  the agent's first later call whose input carries its result (a zero-length span with
  `roller.tool.result_seen: false` when none did).
Times come from the tape (the call records' received / ended times). Span and trace
ids are derived from the capture scope and record ids, so a re-export is identical.
Message content is opt-in (`content=True`: `roller.export.otel_content`).

calls.jsonl is read once, a call at a time, when each agent's calls come in sequence
order (finalize writes them so; else they are held and sorted): a tool call waits for
the agent's later call carrying its result (`AgentTools`), and an attempt's line is
written a span at a time (`traces_text`). Holding every call made a 10k-call capture's
export peak at 2.3 GB (now ~85 MB: its spans).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from roller import __version__
from roller.capture.models import CallRecord, ParticipantRecord, RelationRecord
from roller.capture.reader import Capture
from roller.export.calls import prompt_tokens
from roller.export.otel_content import chat_content
from roller.export.otel_spans import (
    KIND_CLIENT,
    KIND_INTERNAL,
    Span,
    attribute,
    call_times,
    derived_id,
    unix_ns,
)
from roller.export.otel_tools import AgentTools, OutOfOrder
from roller.wire import codec_named


def _chat_span(scope: str, call: CallRecord, parent: str | None, content: bool) -> Span:
    start, end = call_times(call, 0)
    usage = call.usage
    codec = codec_named(call.protocol)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": codec.chat.provider if codec else None,
        "gen_ai.request.model": call.model,
        "gen_ai.response.model": call.response_model,
        "gen_ai.response.id": call.response_id,
        "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
        "gen_ai.usage.input_tokens": prompt_tokens(call),
        "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens if usage else None,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens if usage else None,
        "http.response.status_code": call.response.status,
        "roller.call_id": call.call_id,
        "roller.call.sequence": call.sequence,
        "roller.protocol": call.protocol,
        "roller.identity_status": call.identity_status,
        "roller.export_status": call.export_status,
    }
    if content:
        attrs.update(chat_content(call))
    failed = call.execution_status != "completed"
    return Span(
        span_id=derived_id(scope, "chat", call.call_id, length=16),
        name=f"chat {call.model or 'unknown'}",
        kind=KIND_CLIENT,
        start=start,
        end=end,
        parent=parent,
        attributes=attrs,
        error=f"{call.execution_status}: {call.response.outcome}" if failed else None,
    )


class _Trace:
    def __init__(self, capture: Capture, content: bool) -> None:
        self.capture = capture
        self.scope = capture.manifest.capture_scope
        self.content = content
        self.participants = {p.participant_id: p for p in capture.manifest.participants}
        # each child's first established spawn, from one pass over the relations
        self.spawns: dict[str, RelationRecord] = {}
        for r in capture.relations:
            if r.type == "spawn" and r.status == "established" and r.child_participant_id:
                self.spawns.setdefault(r.child_participant_id, r)
        self.spans: list[Span] = []
        self.tool_spans: dict[tuple[str, str], Span] = {}  # (participant, tool id) -> span
        self.fallback = unix_ns(capture.manifest.started_at) or 0
        self.chats: dict[str, list[Span]] = {}  # participant -> its chat spans, in order
        self.tools: dict[str, AgentTools] = {}  # participant -> its tool calls
        self.unattributed: list[Span] = []  # chat spans of calls no agent made
        self.own_spans: dict[str, list[Span]] = {}  # agent span -> its chat and tool spans
        try:
            self._read()
        except OutOfOrder:
            self._read_held()

    def agent_span_id(self, p: ParticipantRecord) -> str:
        return derived_id(self.scope, "agent", p.participant_id, length=16)

    def _read(self) -> None:
        """Every call's spans, calls.jsonl read once, a call at a time: each agent's calls
        in sequence order (as finalize writes them), or `OutOfOrder`."""
        listing: dict[str, list[ParticipantRecord]] = {}  # call id -> who lists it
        for p in self.capture.manifest.participants:
            for call_id in p.call_ids:
                listing.setdefault(call_id, []).append(p)
        for call in self.capture.calls:
            for p in listing.get(call.call_id, ()):
                self._see(p, call, strict=True)
            if call.participant_id is None:
                self.unattributed.append(_chat_span(self.scope, call, None, self.content))

    def _read_held(self) -> None:
        """`_read` for calls out of order: every call held, each agent's sorted."""
        self.chats, self.tools, self.unattributed = {}, {}, []
        held = list(self.capture.calls)
        calls = {c.call_id: c for c in held}
        for p in self.capture.manifest.participants:
            own = (calls[c] for c in p.call_ids if c in calls)
            for call in sorted(own, key=lambda c: c.sequence):
                self._see(p, call, strict=False)
        for call in held:
            if call.participant_id is None:
                self.unattributed.append(_chat_span(self.scope, call, None, self.content))

    def _see(self, p: ParticipantRecord, call: CallRecord, strict: bool) -> None:
        tools = self.tools.get(p.participant_id)
        if tools is None:
            tools = self.tools[p.participant_id] = AgentTools(self.content, strict)
        tools.see(call)
        span = _chat_span(self.scope, call, self.agent_span_id(p), self.content)
        self.chats.setdefault(p.participant_id, []).append(span)

    def add_participant(self, p: ParticipantRecord) -> None:
        span_id = self.agent_span_id(p)
        mine = self.own_spans.setdefault(span_id, [])  # what its agent span covers
        mine += self.chats.get(p.participant_id, [])
        tools = self.tools.get(p.participant_id)
        for tool_id, span in (tools.spans(self.scope, span_id) if tools else {}).items():
            self.tool_spans[(p.participant_id, tool_id)] = span
            mine.append(span)
        self.spans += mine

    def parent_of(self, p: ParticipantRecord) -> str | None:
        if p.role == "root":
            return None
        spawn = self.spawns.get(p.participant_id)
        parent = self.participants.get(p.parent_participant_id or "")
        if spawn is not None and parent is not None:
            tool_id = spawn.model_tool_ref.call_id if spawn.model_tool_ref else spawn.tool_call_id
            span = self.tool_spans.get((parent.participant_id, tool_id or ""))
            if span is not None:
                return span.span_id
        return self.agent_span_id(parent) if parent is not None else None

    def agent_span(self, p: ParticipantRecord) -> Span:
        mine = self.own_spans.get(self.agent_span_id(p), ())  # its chat and tool spans
        start = min((s.start for s in mine), default=self.fallback)
        end = max((s.end for s in mine), default=start)
        return Span(
            span_id=self.agent_span_id(p),
            name=f"invoke_agent {p.name or p.role}",
            kind=KIND_INTERNAL,
            start=start,
            end=end,
            parent=self.parent_of(p),
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": p.participant_id,
                "gen_ai.agent.name": p.name,
                "roller.participant.role": p.role,
                "roller.participant.depth": p.depth,
                "roller.participant.state": p.state,
            },
            error="participant failed" if p.state == "failed" else None,
        )


def _stretch(spans: list[Span]) -> None:
    """An agent span covers its descendants' spans (a child may outlive its spawning tool)."""
    by_id = {s.span_id: s for s in spans}
    for span in sorted(spans, key=lambda s: -s.end):
        parent = by_id.get(span.parent or "")
        while parent is not None:
            if parent.attributes.get("gen_ai.operation.name") == "invoke_agent":
                parent.start = min(parent.start, span.start)
                parent.end = max(parent.end, span.end)
            parent = by_id.get(parent.parent or "")


def traces_data(capture: Capture, content: bool = False) -> dict[str, Any]:
    """The attempt's spans as one OTLP JSON `TracesData` object (module docstring)."""
    spans, trace_id, envelope = _traces(capture, content)
    envelope["resourceSpans"][0]["scopeSpans"][0]["spans"] = [s.json(trace_id) for s in spans]
    return envelope


_SPANS: Final = "\x00spans"  # where the spans go in the envelope's text


def traces_line(capture: Capture, content: bool = False) -> str:
    """`json.dumps(traces_data(capture, content), ensure_ascii=False)`, made a span at a
    time (`traces_text`)."""
    return "".join(traces_text(capture, content))


def traces_text(capture: Capture, content: bool = False) -> Iterator[str]:
    """`traces_line` in pieces, a span's text at a time (a span's dict lives until its
    text is made, and no piece is joined to the others): what `roller export otel`
    writes for an attempt."""
    spans, trace_id, envelope = _traces(capture, content)
    envelope["resourceSpans"][0]["scopeSpans"][0]["spans"] = [_SPANS]
    text = json.dumps(envelope, ensure_ascii=False)
    # the placeholder is the document's last string: only brackets follow it
    head, marker, tail = text.rpartition(json.dumps(_SPANS))
    assert marker, "the spans' placeholder is in the envelope"
    yield head
    for n, span in enumerate(spans):
        yield (", " if n else "") + json.dumps(span.json(trace_id), ensure_ascii=False)
    yield tail


def _traces(capture: Capture, content: bool) -> tuple[list[Span], str, dict[str, Any]]:
    """The spans (in order, agents stretched over their descendants), the trace id, and
    the `TracesData` object around them with an empty span list."""
    trace = _Trace(capture, content)
    for p in capture.manifest.participants:
        trace.add_participant(p)
    agents = [trace.agent_span(p) for p in capture.manifest.participants]
    spans = agents + trace.spans + trace.unattributed
    _stretch(spans)
    m = capture.manifest
    trace_id = derived_id(trace.scope, "trace", length=32)
    resource = {
        "service.name": "roller",
        "roller.harness": m.harness.name,
        "roller.harness.version": m.harness.version,
        "roller.sample_id": m.sample_id,
        "roller.attempt": m.attempt,
        "roller.capture_scope": m.capture_scope,
    }
    envelope = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [attribute(k, v) for k, v in resource.items() if v is not None]
                },
                "scopeSpans": [{"scope": {"name": "roller", "version": __version__}, "spans": []}],
            }
        ]
    }
    return spans, trace_id, envelope

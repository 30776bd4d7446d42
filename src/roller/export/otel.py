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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roller import __version__
from roller.capture.models import CallRecord, ParticipantRecord, RelationRecord
from roller.capture.reader import Capture
from roller.export.calls import prompt_tokens
from roller.export.otel_content import chat_content, tool_content
from roller.wire import codec_named

KIND_INTERNAL = 1
KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2


def _hex(*parts: str, length: int) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:length]


def _ns(stamp: str | None) -> int | None:
    if stamp is None:
        return None
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP JSON `KeyValue` (int64 as a string, as the JSON mapping writes it)."""
    return {"key": key, "value": _any_value(value)}


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


@dataclass
class _Span:
    span_id: str
    name: str
    kind: int
    start: int
    end: int
    parent: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def json(self, trace_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(max(self.end, self.start)),
            "attributes": [attribute(k, v) for k, v in self.attributes.items() if v is not None],
            "status": {"code": STATUS_ERROR, "message": self.error}
            if self.error
            else {"code": STATUS_OK},
        }
        if self.parent:
            out["parentSpanId"] = self.parent
        return out


def _times(call: CallRecord, fallback: int) -> tuple[int, int]:
    start = _ns(call.request.received_at) or fallback
    return start, _ns(call.response.ended_at) or start


def _chat_span(scope: str, call: CallRecord, parent: str | None, content: bool) -> _Span:
    start, end = _times(call, 0)
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
    return _Span(
        span_id=_hex(scope, "chat", call.call_id, length=16),
        name=f"chat {call.model or 'unknown'}",
        kind=KIND_CLIENT,
        start=start,
        end=end,
        parent=parent,
        attributes=attrs,
        error=f"{call.execution_status}: {call.response.outcome}" if failed else None,
    )


def _tool_spans(
    scope: str, calls: list[CallRecord], agent_span: str, content: bool
) -> dict[str, _Span]:
    """tool-call id -> its `execute_tool` span, for every tool call the agent's outputs emitted."""
    spans: dict[str, _Span] = {}
    for n, call in enumerate(calls):
        _, emitted_at = _times(call, 0)
        for tool in call.tool_refs.emitted:
            tool_id = tool.id or tool.ref
            if tool_id is None:
                continue
            answered = next(
                (
                    later
                    for later in calls[n + 1 :]
                    if any(r.id == tool_id for r in later.tool_refs.results)
                ),
                None,
            )
            end = _times(answered, emitted_at)[0] if answered else emitted_at
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": tool_id,
                "gen_ai.tool.type": "function",
                "roller.tool.emitted_by_call_id": call.call_id,
                "roller.tool.result_seen": answered is not None,
                "roller.tool.result_call_id": answered.call_id if answered else None,
            }
            if content:
                attrs.update(tool_content(call, answered, tool_id))
            spans[tool_id] = _Span(
                span_id=_hex(scope, "tool", call.call_id, tool_id, length=16),
                name=f"execute_tool {tool.name}",
                kind=KIND_INTERNAL,
                start=emitted_at,
                end=end,
                parent=agent_span,
                attributes=attrs,
            )
    return spans


class _Trace:
    def __init__(self, capture: Capture, content: bool) -> None:
        self.capture = capture
        self.scope = capture.manifest.capture_scope
        self.content = content
        self.calls = {c.call_id: c for c in capture.calls}
        self.participants = {p.participant_id: p for p in capture.manifest.participants}
        # each child's first established spawn, from one pass over the relations
        self.spawns: dict[str, RelationRecord] = {}
        for r in capture.relations:
            if r.type == "spawn" and r.status == "established" and r.child_participant_id:
                self.spawns.setdefault(r.child_participant_id, r)
        self.spans: list[_Span] = []
        self.tool_spans: dict[tuple[str, str], _Span] = {}  # (participant, tool id) -> span
        self.fallback = _ns(capture.manifest.started_at) or 0

    def agent_span_id(self, p: ParticipantRecord) -> str:
        return _hex(self.scope, "agent", p.participant_id, length=16)

    def own_calls(self, p: ParticipantRecord) -> list[CallRecord]:
        return sorted(
            (self.calls[c] for c in p.call_ids if c in self.calls), key=lambda c: c.sequence
        )

    def add_participant(self, p: ParticipantRecord) -> None:
        calls = self.own_calls(p)
        span_id = self.agent_span_id(p)
        for call in calls:
            self.spans.append(_chat_span(self.scope, call, span_id, self.content))
        for tool_id, span in _tool_spans(self.scope, calls, span_id, self.content).items():
            self.tool_spans[(p.participant_id, tool_id)] = span
            self.spans.append(span)

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

    def agent_span(self, p: ParticipantRecord) -> _Span:
        mine = [s for s in self.spans if s.parent == self.agent_span_id(p)]
        start = min((s.start for s in mine), default=self.fallback)
        end = max((s.end for s in mine), default=start)
        return _Span(
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


def _stretch(spans: list[_Span]) -> None:
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
    trace = _Trace(capture, content)
    for p in capture.manifest.participants:
        trace.add_participant(p)
    agents = [trace.agent_span(p) for p in capture.manifest.participants]
    spans = agents + trace.spans
    for call in capture.calls:
        if call.participant_id is None:
            spans.append(_chat_span(trace.scope, call, None, content))
    _stretch(spans)
    m = capture.manifest
    trace_id = _hex(trace.scope, "trace", length=32)
    resource = {
        "service.name": "roller",
        "roller.harness": m.harness.name,
        "roller.harness.version": m.harness.version,
        "roller.sample_id": m.sample_id,
        "roller.attempt": m.attempt,
        "roller.capture_scope": m.capture_scope,
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [attribute(k, v) for k, v in resource.items() if v is not None]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "roller", "version": __version__},
                        "spans": [s.json(trace_id) for s in spans],
                    }
                ],
            }
        ]
    }

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
written a span at a time (`traces_text`). A chat or tool span is final once made, so its
text goes to a spool beside the export (`_Texts`) and only its place is held; the agent
spans, which come first in the line and cover their descendants' spans, are made last
from each agent's extent and the tool spans children hang under. Holding every call
made a 10k-call capture's export peak at 2.3 GB, holding every span a 100k-call one's
at ~1 GB.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from array import array
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


class _Texts:
    """Span texts written to an anonymous temporary file as they are made, each group's
    (an agent's, the unattributed calls') places kept in order: a span is final once made
    (only agent spans are stretched, and those are made last), so it need not be held."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._end = 0
        self.groups: dict[str | None, array[int]] = {}  # group -> offset, length, ...

    def put(self, group: str | None, span: Span) -> None:
        data = json.dumps(span.json(self.trace_id), ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
        self._file.seek(self._end)
        self._file.write(data)
        self.groups.setdefault(group, array("q")).extend((self._end, len(data)))
        self._end += len(data)

    def of(self, group: str | None) -> Iterator[str]:
        places = self.groups.get(group, array("q"))
        for n in range(0, len(places), 2):
            self._file.seek(places[n])
            yield self._file.read(places[n + 1]).decode("utf-8", "surrogatepass")

    def clear(self) -> None:
        self.groups.clear()
        self._end = 0
        self._file.truncate(0)

    def close(self) -> None:
        self._file.close()


_UNATTRIBUTED: Final = None  # the group of the chat spans of calls no agent made


class _Trace:
    """An attempt's spans: each chat and tool span's text spooled as it is made (`_Texts`),
    what is held per agent its spans' extent (`extents`) and the tool spans a child's
    agent span hangs under (`tool_spans`): the agent spans, made last, cover their
    descendants' spans from those alone."""

    def __init__(self, capture: Capture, content: bool, texts: _Texts) -> None:
        self.capture = capture
        self.scope = capture.manifest.capture_scope
        self.content = content
        self.texts = texts
        self.participants = {p.participant_id: p for p in capture.manifest.participants}
        # each child's first established spawn, from one pass over the relations
        self.spawns: dict[str, RelationRecord] = {}
        for r in capture.relations:
            if r.type == "spawn" and r.status == "established" and r.child_participant_id:
                self.spawns.setdefault(r.child_participant_id, r)
        # (participant, tool id) -> the span of a tool call a child's spawn names
        self.tool_spans: dict[tuple[str, str], Span] = {}
        self.spawning = {
            self._spawning_tool(self.participants[c], r)
            for c, r in self.spawns.items()
            if c in self.participants
        }
        self.fallback = unix_ns(capture.manifest.started_at) or 0
        self.tools: dict[str, AgentTools] = {}  # participant -> its tool calls
        self.extents: dict[str, tuple[int, int]] = {}  # agent span -> its own spans' extent
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
                span = _chat_span(self.scope, call, None, self.content)
                self.texts.put(_UNATTRIBUTED, span)

    def _read_held(self) -> None:
        """`_read` for calls out of order: every call held, each agent's sorted."""
        self.tools, self.extents = {}, {}
        self.texts.clear()
        held = list(self.capture.calls)
        calls = {c.call_id: c for c in held}
        for p in self.capture.manifest.participants:
            own = (calls[c] for c in p.call_ids if c in calls)
            for call in sorted(own, key=lambda c: c.sequence):
                self._see(p, call, strict=False)
        for call in held:
            if call.participant_id is None:
                span = _chat_span(self.scope, call, None, self.content)
                self.texts.put(_UNATTRIBUTED, span)

    def _see(self, p: ParticipantRecord, call: CallRecord, strict: bool) -> None:
        tools = self.tools.get(p.participant_id)
        if tools is None:
            tools = self.tools[p.participant_id] = AgentTools(self.content, strict)
        tools.see(call)
        span = _chat_span(self.scope, call, self.agent_span_id(p), self.content)
        self._own(p, span)

    def _own(self, p: ParticipantRecord, span: Span) -> None:
        """`span`, one of `p`'s agent span's own, spooled and its extent kept."""
        self.texts.put(p.participant_id, span)
        start, end = self.extents.get(span.parent or "", (span.start, span.end))
        self.extents[span.parent or ""] = (min(start, span.start), max(end, span.end))

    def add_participant(self, p: ParticipantRecord) -> None:
        """`p`'s tool spans, after its chat spans; those a child's spawn names are kept."""
        span_id = self.agent_span_id(p)
        tools = self.tools.pop(p.participant_id, None)
        for tool_id, span in (tools.spans(self.scope, span_id) if tools else {}).items():
            self._own(p, span)
            if (p.participant_id, tool_id) in self.spawning:  # held without its attributes
                stub = Span(span.span_id, "", span.kind, span.start, span.end, span.parent)
                self.tool_spans[(p.participant_id, tool_id)] = stub

    @staticmethod
    def _spawning_tool(child: ParticipantRecord, spawn: RelationRecord) -> tuple[str, str]:
        """(the child's parent participant, the tool call its spawn names)."""
        tool_id = spawn.model_tool_ref.call_id if spawn.model_tool_ref else spawn.tool_call_id
        return (child.parent_participant_id or "", tool_id or "")

    def parent_of(self, p: ParticipantRecord) -> str | None:
        if p.role == "root":
            return None
        spawn = self.spawns.get(p.participant_id)
        parent = self.participants.get(p.parent_participant_id or "")
        if spawn is not None and parent is not None:
            span = self.tool_spans.get(self._spawning_tool(p, spawn))
            if span is not None:
                return span.span_id
        return self.agent_span_id(parent) if parent is not None else None

    def agent_span(self, p: ParticipantRecord) -> Span:
        start, end = self.extents.get(self.agent_span_id(p), (self.fallback, self.fallback))
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
    data: dict[str, Any] = json.loads(traces_line(capture, content))
    return data


def traces_line(capture: Capture, content: bool = False) -> str:
    """The attempt's `TracesData` object as one line of JSON (`json.dumps`,
    `ensure_ascii=False`), made a span at a time (`traces_text`)."""
    return "".join(traces_text(capture, content))


_SPANS: Final = "\x00spans"  # where the spans go in the envelope's text


def traces_text(capture: Capture, content: bool = False) -> Iterator[str]:
    """`traces_line` in pieces, a span's text at a time, no piece joined to the others:
    what `roller export otel` writes for an attempt. The agent spans come first, each
    covering its descendants' spans; then each agent's chat and tool spans, then the
    unattributed calls' chat spans, as they were spooled."""
    m = capture.manifest
    trace_id = derived_id(m.capture_scope, "trace", length=32)
    texts = _Texts(trace_id)
    try:
        trace = _Trace(capture, content, texts)
        for p in m.participants:
            trace.add_participant(p)
        agents = [trace.agent_span(p) for p in m.participants]
        # each agent span covers its descendant agents' (through their spawning tool's)
        _stretch(agents + list(trace.tool_spans.values()))
        envelope = _envelope(capture)
        envelope["resourceSpans"][0]["scopeSpans"][0]["spans"] = [_SPANS]
        text = json.dumps(envelope, ensure_ascii=False)
        # the placeholder is the document's last string: only brackets follow it
        head, marker, tail = text.rpartition(json.dumps(_SPANS))
        assert marker, "the spans' placeholder is in the envelope"
        yield head
        pieces = itertools.chain(
            (json.dumps(a.json(trace_id), ensure_ascii=False) for a in agents),
            *(texts.of(p.participant_id) for p in m.participants),
            texts.of(_UNATTRIBUTED),
        )
        for n, piece in enumerate(pieces):
            yield ", " + piece if n else piece
        yield tail
    finally:
        texts.close()


def _envelope(capture: Capture) -> dict[str, Any]:
    """The `TracesData` object around the spans, with an empty span list."""
    m = capture.manifest
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
                "scopeSpans": [{"scope": {"name": "roller", "version": __version__}, "spans": []}],
            }
        ]
    }

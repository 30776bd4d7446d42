"""`roller export otel`: OTLP JSON lines, parsed with OpenTelemetry's own protobuf schema
(`TracesData`), whose parent links form the captured agent tree."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from roller.capture.reader import Capture, read_attempt
from roller.export import otel
from roller.export.otel import traces_data, traces_line
from tests.export.real_captures import RealCaptures, agents_reversed
from tests.support.captures import roller


def _parse(line: str) -> TracesData:
    """OTLP/JSON writes trace and span ids as hex where the protobuf JSON mapping has
    base64 (the one documented difference); everything else parses as is."""
    value = json.loads(line)
    for resource in value["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        assert len(span[key]) == (32 if key == "traceId" else 16)
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(value), TracesData())


def _attrs(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = (
            [v.string_value for v in kv.value.array_value.values]
            if kind == "array_value"
            else getattr(kv.value, kind)
        )
    return out


def _spans(capture: Capture, content: bool = False) -> list[Span]:
    data = _parse(json.dumps(traces_data(capture, content)))
    (resource,) = data.resource_spans
    (scope,) = resource.scope_spans
    return list(scope.spans)


def _agent_of(span: Span, by_id: dict[bytes, Span], agents: dict[bytes, str]) -> str | None:
    """The agent whose span is the nearest agent ancestor of `span`."""
    parent = by_id.get(span.parent_span_id)
    while parent is not None and parent.span_id not in agents:
        parent = by_id.get(parent.parent_span_id)
    return agents[parent.span_id] if parent is not None else None


def test_parent_links_form_the_agent_tree(real_captures: RealCaptures) -> None:
    for key, capture in real_captures.items():
        spans = _spans(capture)
        by_id = {s.span_id: s for s in spans}
        assert len(by_id) == len(spans), key
        assert len({s.trace_id for s in spans}) == 1 and len(spans[0].trace_id) == 16
        agents = {
            s.span_id: _attrs(s)["gen_ai.agent.id"]
            for s in spans
            if s.name.startswith("invoke_agent")
        }

        tree = {
            agents[s.span_id]: _agent_of(s, by_id, agents) for s in spans if s.span_id in agents
        }
        assert tree == {
            p.participant_id: p.parent_participant_id for p in capture.manifest.participants
        }, key
        chats = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
        assert len(chats) == len(capture.calls), key
        for chat in chats:
            call = next(c for c in capture.calls if c.call_id == _attrs(chat)["roller.call_id"])
            assert _agent_of(chat, by_id, agents) == call.participant_id
            assert chat.start_time_unix_nano <= chat.end_time_unix_nano
            assert chat.kind == Span.SPAN_KIND_CLIENT


def test_a_child_hangs_under_its_spawning_tool_span(
    real_captures: RealCaptures,
) -> None:
    for key in [
        ("claude-code", "parallel"),
        ("opencode", "parallel"),
        ("codex", "v2-fork"),
        ("gemini-cli", "parallel"),
    ]:
        capture = real_captures[key]
        spans = _spans(capture)
        by_id = {s.span_id: s for s in spans}
        spawns = {
            r.child_participant_id: r
            for r in capture.relations
            if r.type == "spawn" and r.status == "established"
        }
        for span in spans:
            attrs = _attrs(span)
            if attrs.get("roller.participant.role") != "child":
                continue
            tool = by_id[span.parent_span_id]
            tool_attrs = _attrs(tool)
            spawn = spawns[attrs["gen_ai.agent.id"]]
            assert tool_attrs["gen_ai.operation.name"] == "execute_tool", key
            expected = spawn.model_tool_ref.call_id if spawn.model_tool_ref else spawn.tool_call_id
            assert tool_attrs["gen_ai.tool.call.id"] == expected
            assert tool_attrs["roller.tool.emitted_by_call_id"] == spawn.source_call_id
            # The agent span covers its own calls, and those of its subtree.
            assert span.start_time_unix_nano <= min(
                s.start_time_unix_nano for s in spans if s.parent_span_id == span.span_id
            )


def test_usage_follows_the_genai_conventions(real_captures: RealCaptures) -> None:
    capture = real_captures[("claude-code", "parallel")]
    for span in _spans(capture):
        attrs = _attrs(span)
        if attrs.get("gen_ai.operation.name") != "chat":
            continue
        call = next(c for c in capture.calls if c.call_id == attrs["roller.call_id"])
        assert span.name == f"chat {call.model}"
        assert attrs["gen_ai.provider.name"] == "anthropic"
        assert call.usage is not None
        total = (
            (call.usage.input_tokens or 0)
            + (call.usage.cache_read_tokens or 0)
            + (call.usage.cache_write_tokens or 0)
        )
        assert attrs["gen_ai.usage.input_tokens"] == total
        assert attrs["gen_ai.usage.output_tokens"] == call.usage.output_tokens
        assert "gen_ai.input.messages" not in attrs  # content is opt-in


def test_content_is_opt_in_and_in_the_genai_message_format(
    real_captures: RealCaptures,
) -> None:
    capture = real_captures[("opencode", "parallel")]
    spans = _spans(capture, content=True)
    chats = [_attrs(s) for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
    for attrs in chats:
        messages = json.loads(attrs["gen_ai.input.messages"])
        assert messages and all({"role", "parts"} <= set(m) for m in messages)
        assert json.loads(attrs["gen_ai.system_instructions"])[0]["type"] == "text"
        assert json.loads(attrs["gen_ai.output.messages"])[0]["role"] == "assistant"
    tools = [_attrs(s) for s in spans if _attrs(s).get("gen_ai.operation.name") == "execute_tool"]
    assert tools and all("gen_ai.tool.call.arguments" in t for t in tools)
    assert any("gen_ai.tool.call.result" in t for t in tools)


def test_cli_writes_one_line_per_attempt(real_captures: RealCaptures, tmp_path: Path) -> None:
    run = real_captures.run("codex", "v1-nested")
    out = tmp_path / "spans.jsonl"
    result = roller("export", "otel", str(run), "-o", str(out))
    assert result.returncode == 0, result.stderr
    (line,) = out.read_text().splitlines()
    assert _parse(line).resource_spans[0].scope_spans[0].spans
    again = roller("export", "otel", str(run), "-o", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0 and (tmp_path / "again.jsonl").read_text() == out.read_text()
    assert "nothing left out but message content" in result.stderr


def test_a_line_is_the_traces_object_written_whole(real_captures: RealCaptures) -> None:
    # `roller export otel` writes each attempt's line a span at a time, each span's text
    # spooled as it is made: the same text as the object it parses to, written whole
    for capture in real_captures.values():
        for content in (False, True):
            line = traces_line(capture, content)
            assert json.dumps(json.loads(line), ensure_ascii=False) == line


def test_agent_spans_cover_their_descendants_spans(real_captures: RealCaptures) -> None:
    """An agent span is made last, from its own spans' extent and its descendant agents':
    it starts with the first span under it, at any depth, and ends with the last."""
    covered = 0
    for capture in real_captures.values():
        spans = _spans(capture)
        by_id = {s.span_id: s for s in spans}
        under: dict[bytes, list[Span]] = {}
        for span in spans:
            parent = by_id.get(span.parent_span_id)
            while parent is not None:
                under.setdefault(parent.span_id, []).append(span)
                parent = by_id.get(parent.parent_span_id)
        for span in spans:
            mine = under.get(span.span_id)
            if span.name.startswith("invoke_agent") and mine:
                assert span.start_time_unix_nano == min(s.start_time_unix_nano for s in mine)
                assert span.end_time_unix_nano == max(s.end_time_unix_nano for s in mine)
                covered += 1
    assert covered >= 20, covered


def test_calls_out_of_order_give_the_same_spans(
    real_captures: RealCaptures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # calls.jsonl is read once when each agent's calls come in sequence order; in any
    # other order they are held and sorted, with the same result
    checked = 0
    held = {"times": 0}
    read_held = otel._Trace._read_held

    def counted(trace: otel._Trace) -> None:
        held["times"] += 1
        read_held(trace)

    monkeypatch.setattr(otel._Trace, "_read_held", counted)
    for (harness, name), capture in real_captures.items():
        # the agents' calls reversed; calls no agent made keep their places (their spans
        # come in calls.jsonl's order, whatever it is)
        dest = agents_reversed(capture, tmp_path / f"{harness}-{name}")
        if dest is None:
            continue
        shuffled = read_attempt(dest)
        for content in (False, True):
            assert traces_data(shuffled, content) == traces_data(capture, content)
        checked += 1
    assert checked >= 10
    assert held["times"] >= 2 * checked  # each of them read the held way

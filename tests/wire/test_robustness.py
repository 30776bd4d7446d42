"""Codecs are fed recordings of arbitrary bytes: they never raise, and what they return
is always coherent (`complete` only with an output and no reason; otherwise a reason)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire import PROTOCOL_NAMES, codec_for
from roller.wire.endpoints import endpoint_for
from roller.wire.types import Codec, Reassembly
from tests.wire.settings import FUZZ
from tests.wire.streams import (
    anthropic_streams,
    chat_streams,
    gemini_streams,
    json_value,
    responses_streams,
    serialize,
)

CODECS = [codec_for(name) for name in PROTOCOL_NAMES]


def check(result: Reassembly) -> None:
    assert result.output is None or isinstance(result.output, dict)
    assert result.error is None or isinstance(result.error, dict)
    if result.complete:
        assert result.output is not None
        assert result.incomplete_reason is None
    else:
        assert isinstance(result.incomplete_reason, str)
        assert result.incomplete_reason
    assert all(isinstance(p, str) for p in result.problems)
    assert all(set(u) == {"event", "data", "why"} for u in result.unmerged)
    json.dumps(result.output)  # what reassembly builds can be written back as JSON


def read_everything(codec: Codec, result: Reassembly) -> None:
    output = result.output
    codec.response_model(output)
    codec.response_id(output)
    codec.finish_reason(output)
    codec.usage(output)
    for call in codec.output_tool_calls(output):
        assert call.ref is None or isinstance(call.ref, str)
    codec.tool_call_marker_without_identity(output)


def read_request(codec: Codec, request: Any) -> None:
    request = request if isinstance(request, dict) else None
    codec.context_tool_calls(request)
    codec.context_tool_results(request)
    assert all(isinstance(t, str) for t in codec.context_texts(request))
    assert all(isinstance(t, str) for t in codec.offered_tools(request))
    endpoint = endpoint_for("POST", "/v1beta/models/m:streamGenerateContent")
    codec.is_streaming_request(request, endpoint)
    codec.request_model(request, endpoint)


@FUZZ
@given(st.binary(max_size=400), st.booleans(), st.sampled_from([200, 201, 400, 429, 500, 529]))
def test_random_bytes_never_raise(body: bytes, streamed: bool, status: int) -> None:
    for codec in CODECS:
        result = codec.reassemble(body, streamed=streamed, status=status)
        check(result)
        read_everything(codec, result)


_EVENT_NAMES = [
    None,
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "error",
    "ping",
    "response.created",
    "response.output_item.added",
    "response.output_text.delta",
    "response.completed",
]


@st.composite
def json_event_streams(draw: st.DrawFn) -> bytes:
    """SSE whose events carry random JSON: the shapes codecs see from a broken server."""
    rng = draw(st.randoms(use_true_random=True))
    events = []
    for _ in range(rng.randint(0, 8)):
        data = json_value(rng)
        if isinstance(data, dict) and rng.random() < 0.7:
            data["type"] = rng.choice(_EVENT_NAMES[1:])
            for key in ("index", "output_index", "content_index", "summary_index"):
                if rng.random() < 0.5:
                    data[key] = rng.choice([0, 1, -1, 2**70, "0", None])
            for key in (
                "delta",
                "message",
                "content_block",
                "response",
                "item",
                "part",
                "candidates",
                "choices",
                "usage",
                "error",
            ):
                if rng.random() < 0.2:
                    data[key] = json_value(rng)
        events.append((rng.choice(_EVENT_NAMES), data))
    return serialize(events, "\n", ensure_ascii=False, comments=False)


@FUZZ
@given(json_event_streams(), st.sampled_from(PROTOCOL_NAMES))
def test_random_json_events_never_raise(body: bytes, name: str) -> None:
    codec = codec_for(name)  # type: ignore[arg-type]
    result = codec.reassemble(body, streamed=True)
    check(result)
    read_everything(codec, result)


def _mutate(
    rng: random.Random, events: list[tuple[str | None, Any]]
) -> list[tuple[str | None, Any]]:
    events = list(events)
    for _ in range(rng.randint(1, 4)):
        if not events:
            break
        i = rng.randrange(len(events))
        op = rng.randrange(5)
        if op == 0:
            del events[i]
        elif op == 1:
            events.insert(rng.randrange(len(events) + 1), events[i])
        elif op == 2:
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
        elif op == 3 and isinstance(events[i][1], dict):
            data = json.loads(json.dumps(events[i][1]))
            target = data
            while isinstance(target, dict) and target and rng.random() < 0.6:
                key = rng.choice(list(target))
                if not isinstance(target[key], dict):
                    break
                target = target[key]
            if isinstance(target, dict) and target:
                target[rng.choice(list(target))] = json_value(rng)
            events[i] = (events[i][0], data)
        else:
            events[i] = (events[i][0], "{not json")
    return events


@FUZZ
@given(
    st.one_of(anthropic_streams(), chat_streams(), responses_streams(), gemini_streams()),
    st.randoms(use_true_random=True),
)
def test_mutated_valid_streams_never_raise(stream: Any, rng: random.Random) -> None:
    body = serialize(_mutate(rng, stream.events), "\r\n", ensure_ascii=True, comments=False)
    for codec in CODECS:
        result = codec.reassemble(body, streamed=True)
        check(result)
        read_everything(codec, result)


@FUZZ
@given(st.randoms(use_true_random=True))
def test_request_accessors_never_raise(rng: random.Random) -> None:
    request: Any = json_value(rng)
    if rng.random() < 0.8:
        request = {
            key: json_value(rng)
            for key in rng.sample(
                [
                    "messages",
                    "input",
                    "contents",
                    "system",
                    "instructions",
                    "tools",
                    "systemInstruction",
                    "functions",
                    "model",
                    "stream",
                ],
                k=rng.randint(1, 5),
            )
        }
        for key in ("messages", "input", "contents"):
            if key in request and rng.random() < 0.7:
                request[key] = [
                    {
                        "role": rng.choice(["user", "assistant", "tool", "model", "system"]),
                        "type": rng.choice(["function_call", "function_call_output", "message"]),
                        "content": json_value(rng),
                        "parts": json_value(rng),
                        "tool_calls": json_value(rng),
                        "output": json_value(rng),
                    }
                    for _ in range(rng.randint(0, 3))
                ]
    for codec in CODECS:
        read_request(codec, request)


@pytest.mark.parametrize("codec", CODECS, ids=PROTOCOL_NAMES)
def test_deeply_nested_json_is_a_finding_not_a_crash(codec: Codec) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    for streamed in (True, False):
        result = codec.reassemble(deep, streamed=streamed)
        check(result)
        assert result.output is None
    nested: Any = "x"
    for _ in range(900):
        nested = {"delta": nested, "text": "x"}
    event = {
        "type": "content_block_delta",
        "index": 0,
        "delta": nested,
        "choices": [{"index": 0, "delta": nested}],
        "candidates": [{"content": {"parts": [nested]}}],
    }
    body = b"data: " + json.dumps(event).encode() + b"\n\n"
    check(codec.reassemble(body, streamed=True))

"""Differential test: an Anthropic stream's end read without reassembly
(`roller.wire.anthropic.ending`, `roller.wire.ending`) against the full reading.

For generated streams (tests/wire/streams.py) written in the form servers write, then
mutated the ways a recording can go wrong (events dropped, repeated, swapped, cut at an
event, an `error` event, a `type` changed or removed, data that is not JSON or not an
object), `stream_terminal` must decide every one and give `read_response`'s `terminal`;
for any body, status and headers, `response_ending` must give `read_response`'s
`streamed` and `terminal` for every protocol.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roller.wire import PROTOCOL_NAMES, anthropic, codec_for
from roller.wire.ending import quick_ending, response_ending
from roller.wire.response import read_response
from roller.wire.sse import decode_body, fields_holding, well_formed, well_formed_fields
from tests.wire.settings import EXAMPLES, TIMEOUT
from tests.wire.streams import (
    anthropic_stream,
    chat_stream,
    gemini_stream,
    json_value,
    responses_stream,
    serialize,
)

STREAM = [["content-type", "text/event-stream"]]
_KINDS = ["message_start", "message_stop", "error", "ping", "content_block_delta", "", None]


def _full_terminal(body: bytes) -> bool | None:
    return read_response(anthropic.CODEC, 200, STREAM, body).terminal


def _escaped(word: str, rng: random.Random) -> str:
    """`word` with one ASCII character as a JSON `\\u00XX` escape (either case)."""
    i = rng.randrange(len(word))
    code = f"{ord(word[i]):04x}"
    return word[:i] + "\\u" + (code.upper() if rng.random() < 0.5 else code) + word[i + 1 :]


def _words_elsewhere(rng: random.Random, data: Any) -> tuple[str | None, Any]:
    """An event holding a kind's word where it names no kind: in a text, or a name
    that only starts with it (`stream_terminal` parses such an event, to no effect)."""
    word = rng.choice(["error", "message_start", "message_stop", "message_st"])
    if rng.random() < 0.5:
        delta = {"type": "text_delta", "text": f"an {word} in the text"}
        return "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    return word + rng.choice(["ed", "s", "_x"]), data


def _escaped_kind(rng: random.Random, data: Any) -> str:
    """An event's JSON with its kind, or its `type` key, spelled with an escape (the
    last `type`, the one that counts): only the escape says it is an `error`,
    `message_start` or `message_stop`."""
    kind = rng.choice(["error", "message_start", "message_stop"])
    key = _escaped("type", rng) if rng.random() < 0.3 else "type"
    spelled = _escaped(kind, rng) if key == "type" or rng.random() < 0.5 else kind
    rest = {k: v for k, v in data.items() if k != "type"} if isinstance(data, dict) else {}
    if kind == "message_start":
        rest.setdefault("message", {"id": "m"})
    members = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in rest.items()]
    return "{" + ", ".join([*members, f'"{key}": "{spelled}"']) + "}"


def _mutated(rng: random.Random) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = list(anthropic_stream(rng, may_cut=False).events)
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(events))
        what = rng.randrange(11)
        name, data = events[i]
        if what == 0:
            del events[i]
        elif what == 1:
            events.insert(i, events[i])
        elif what == 2:
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
        elif what == 3:
            events = events[: i + 1]  # cut at an event's end
        elif what == 4:
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}
            events.insert(i, (rng.choice(["error", None]), error))
        elif what == 5 and isinstance(data, dict):
            kind = rng.choice(_KINDS)
            changed = {k: v for k, v in data.items() if k != "type"}
            if kind is not None:
                changed["type"] = kind
            events[i] = (name, changed)
        elif what == 6:
            events[i] = (rng.choice(_KINDS) or None, data)  # the SSE event name
        elif what == 7:
            events[i] = (name, rng.choice(["not json", "[1, 2]", "null", '"message_stop"']))
        elif what == 8 and isinstance(data, dict) and data.get("type") == "message_start":
            events[i] = (name, {"type": "message_start", "message": json_value(rng)})
        elif what == 9:
            events.insert(i, _words_elsewhere(rng, data))
        elif what == 10:
            events[i] = (name if rng.random() < 0.5 else None, _escaped_kind(rng, data))
        if not events:
            events = [(None, {"type": "ping"})]
    return events


@pytest.mark.timeout(TIMEOUT)
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.randoms(use_true_random=True))
def test_terminal_equals_the_full_reading_on_mutated_streams(rng: random.Random) -> None:
    events = _mutated(rng)
    body = serialize(events, newline="\n", ensure_ascii=rng.random() < 0.5, comments=False)
    assert well_formed_fields(body) is not None
    decided = anthropic.stream_terminal(body)
    assert decided is not None
    assert decided == _full_terminal(body), events


def _stream_body(rng: random.Random, protocol: str) -> bytes:
    build = {
        "anthropic-messages": anthropic_stream,
        "openai-chat-completions": chat_stream,
        "openai-responses": responses_stream,
        "gemini": gemini_stream,
    }[protocol]
    if rng.random() < 0.5:
        return build(rng).fed  # any newline, comments, cut anywhere
    events = _mutated(rng) if protocol == "anthropic-messages" else build(rng).events
    return serialize(events, newline="\n", ensure_ascii=False, comments=False)


@pytest.mark.timeout(TIMEOUT)
@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.randoms(use_true_random=True),
    st.sampled_from([*PROTOCOL_NAMES, None]),
    st.sampled_from([None, 200, 201, 299, 300, 400, 429, 500]),
    st.sampled_from(
        [
            STREAM,
            [["Content-Type", "text/event-stream; charset=utf-8"]],
            [["content-type", "application/json"]],
            [],
            [["content-type", "text/event-stream"], ["content-encoding", "identity"]],
            [["content-type", "text/event-stream"], ["content-encoding", "gzip"]],
        ]
    ),
)
def test_response_ending_equals_read_response(
    rng: random.Random, protocol: Any, status: int | None, headers: list[list[str]]
) -> None:
    body = _stream_body(rng, protocol or rng.choice(PROTOCOL_NAMES))
    if rng.random() < 0.1:
        body = json.dumps(json_value(rng)).encode()
    codec = None if protocol is None else codec_for(protocol)
    reading = read_response(codec, status, headers, body)
    assert response_ending(protocol, status, headers, body) == (
        reading.streamed,
        reading.terminal,
    )
    quick = quick_ending(protocol, status, headers, body)
    assert quick is None or quick == (reading.streamed, reading.terminal)


def test_the_quick_reading_decides_a_server_written_stream() -> None:
    rng = random.Random(16)
    body = serialize(
        list(anthropic_stream(rng, may_cut=False).events), "\n", ensure_ascii=False, comments=False
    )
    assert quick_ending("anthropic-messages", 200, STREAM, body) == (True, True)
    assert quick_ending("anthropic-messages", 200, STREAM, body[:-30]) is None  # cut inside
    assert quick_ending("openai-chat-completions", 200, STREAM, body) is None  # no reader
    assert quick_ending("anthropic-messages", 500, STREAM, body) is None


def test_well_formed_fields_are_the_decoded_events_encoded() -> None:
    rng = random.Random(7)
    for _ in range(200):
        events = _mutated(rng)
        body = serialize(events, newline="\n", ensure_ascii=False, comments=False)
        fields = well_formed_fields(body)
        decoded, tail = decode_body(body)
        assert tail is None and fields is not None
        assert [(e.event, e.data) for e in decoded] == [
            (None if n is None else n.decode(), d.decode()) for n, d in fields
        ]
    for bad in (b"data: x\r\n\r\n", b"\xef\xbb\xbfdata: x\n\n", b"data: \xff\n\n", b"data: x\n"):
        assert well_formed_fields(bad) is None


def test_the_events_holding_a_word_are_the_well_formed_fields_holding_it() -> None:
    rng = random.Random(11)
    words = (b"message_st", b"error")
    for _ in range(300):
        events = _mutated(rng)
        body = serialize(events, newline="\n", ensure_ascii=rng.random() < 0.5, comments=False)
        fields = well_formed_fields(body)
        assert fields and well_formed(body)
        assert fields_holding(body, words) == [
            (name, data)
            for name, data in fields
            if any(word in (name or b"") or word in data for word in words)
        ]
    many = (
        b"event: message_start\ndata: {}\n\n"
        + b"data: " + b"error message_stop " * 500 + b"\n\n"
        + b"data: {}\n\nevent: error\ndata: error\n\n"
    )  # fmt: skip
    assert well_formed(many)
    assert fields_holding(many, words) == [
        (name, data) for name, data in well_formed_fields(many) or [] if name or data != b"{}"
    ]
    for bad in (
        b"",
        b"data: x\r\n\r\n",
        b"\xef\xbb\xbfdata: x\n\n",
        b"data: \xff\n\n",
        b"data: x\n",
        b"event: a\n\n",
        b"data: x\n\ndata: y",
        b": comment\ndata: x\n\n",
    ):
        assert not well_formed(bad) and not well_formed_fields(bad), bad


JSON = [["content-type", "application/json"]]


def _message(rng: random.Random) -> dict[str, Any]:
    text = "".join(rng.choice('ab é\u2603\n"\\') for _ in range(rng.randint(0, 40)))
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": rng.choice(["end_turn", "max_tokens", None]),
        "usage": {"input_tokens": rng.randint(0, 2**70), "output_tokens": 3},
    }


def _whole_body(rng: random.Random) -> bytes:
    """A non-streamed body as a recording may hold it: a message, an error body, or one
    of the ways a body can differ from what orjson and the decoder read alike."""
    what = rng.randrange(14)
    message = _message(rng)
    if what == 0:
        message = {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}
    elif what == 1:
        message = {"error": {"message": "x"}}  # an error object without content
    elif what == 2:
        message["error"] = None  # an error key beside content: still a message
    elif what == 3:
        message["type"] = rng.choice(["error", "message", 7, None])
    body = json.dumps(message, ensure_ascii=rng.random() < 0.5).encode()
    if what == 4:
        return body[: rng.randrange(len(body))]  # cut
    if what == 5:
        return b" \n" + body
    if what == 6:
        return body.replace(b'"msg_01"', b"NaN")
    if what == 7:
        return body.replace(b'"msg_01"', b'"\\ud800"')  # a lone surrogate (decoder only)
    if what == 8:
        depth = rng.choice([10, 399, 400, 900, 990, 1023, 1100])
        return b'{"type": "message", "content": ' + b"[" * depth + b"]" * depth + b"}"
    if what == 9:
        digits = rng.choice([19, 300, 308, 309, 4300, 4301, 5000])
        return body.replace(b'"msg_01"', b"1" * digits)
    if what == 10:
        return b'{"type": "message", "content": [], "type": "error"}'  # a key twice
    if what == 11:
        return json.dumps([message]).encode()
    if what == 12:
        return b"\xef\xbb\xbf" + body
    if what == 13:
        return serialize(list(anthropic_stream(rng, may_cut=False).events), "\n", False, False)
    return body


@pytest.mark.timeout(TIMEOUT)
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.randoms(use_true_random=True), st.sampled_from([200, 201, 400]))
def test_a_whole_bodys_terminal_equals_the_full_reading(rng: random.Random, status: int) -> None:
    body = _whole_body(rng)
    reading = read_response(anthropic.CODEC, status, JSON, body)
    decided = anthropic.whole_terminal(body) if status < 300 else None  # a 2xx body's reader
    assert decided is None or decided == reading.terminal, body[:200]
    ending = response_ending("anthropic-messages", status, JSON, body)
    assert ending == (reading.streamed, reading.terminal)


def test_the_quick_reading_decides_a_json_message_and_leaves_the_rest() -> None:
    rng = random.Random(3)
    body = json.dumps(_message(rng)).encode()
    assert quick_ending("anthropic-messages", 200, JSON, body) == (False, True)
    error = json.dumps({"type": "error", "error": {"type": "api_error"}}).encode()
    assert quick_ending("anthropic-messages", 200, JSON, error) == (False, False)
    assert quick_ending("anthropic-messages", 200, JSON, body[:-1]) is None  # not JSON
    assert quick_ending("anthropic-messages", 200, JSON, b" " + body) is None
    assert (
        quick_ending("anthropic-messages", 200, [*JSON, ["content-encoding", "gzip"]], body) is None
    )
    assert quick_ending("openai-chat-completions", 200, JSON, body) is None  # no reader
    deep = b'{"type": "message", "content": ' + b"[" * 500 + b"]" * 500 + b"}"
    assert anthropic.whole_terminal(deep) is None  # the decoder could refuse its nesting

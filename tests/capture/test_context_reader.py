"""`ContextReader.parse` gives exactly `parse_context`, reading only what a body adds."""

from __future__ import annotations

import json

import pytest

from roller.capture import context_reader
from roller.capture.context import ParsedContext, parse_context, parse_context_slowly
from roller.capture.context_reader import ContextReader


def compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


HEAD = '{"model":"m","system":"sé","messages":['.encode()
FIRST = compact({"role": "user", "content": "task"})


def body(*messages: bytes) -> bytes:
    return HEAD + b",".join(messages) + b"]}"


def same(a: ParsedContext, b: ParsedContext) -> None:
    assert (a.value, a.error, a.json, type(a.value)) == (b.value, b.error, b.json, type(b.value))


@pytest.fixture
def general_calls(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bodies the reader handed to the general path."""
    seen: list[bytes] = []

    def counted(data: bytes) -> ParsedContext:
        seen.append(data)
        return parse_context(data)

    monkeypatch.setattr(context_reader, "parse_context", counted)
    return seen


def test_a_resent_transcript_is_read_by_what_it_adds(general_calls: list[bytes]) -> None:
    reader = ContextReader()
    messages = [FIRST]
    for n in range(6):
        data = body(*messages)
        got = reader.parse(data)
        same(got, parse_context(data))
        assert got.value == parse_context_slowly(data).value
        assert got.json == data  # the record JSON is the body
        messages += [compact({"role": "assistant", "content": [{"n": n, "x": 1.5}]})]
        messages += [compact({"role": "user", "content": f"r{n} \u2028 \U0001f600"})]
    assert general_calls == [body(FIRST)]  # every later call took the shortcut


@pytest.mark.parametrize(
    "added",
    [
        b'{"n":100000000000000000000}',  # an integer past 64 bits (orjson: a float)
        b'{"n":1e5}',  # a number orjson writes otherwise
        b'{"n":1.0E2}',
        b'{"a":1,"a":2}',  # a duplicate key: orjson writes one
        b'{"t":"\\ud800"}',  # a lone surrogate escape: no record holds it
        b'{"t":"\\u00e9"}',  # an escape orjson writes as UTF-8
        b'{"t":"x"} ',  # whitespace
        b"NaN",
        b'{"t":"x"',  # not JSON
        b'{"t":"x"}]}{',
        b"",  # ",]}": nothing added
        b'{"t":"x"}],"more":[1',  # another member after the transcript
        b"[" * 1023 + b"]" * 1023,  # at orjson's nesting limit
        b"[" * 1022 + b"]" * 1022,
    ],
)
def test_an_addition_the_shortcut_cannot_prove_gives_the_general_result(added: bytes) -> None:
    reader = ContextReader()
    reader.parse(body(FIRST))
    data = HEAD + FIRST + b"," + added + b"]}"
    same(reader.parse(data), parse_context(data))


@pytest.mark.parametrize(
    "first",
    [
        b'{"model":"m", "messages":[{"a":1}]}',  # not compact: not orjson's writing
        b'{"messages":[{"a":1}],"stream":true}',  # the transcript is not the last member
        b'{"messages":[]}',  # nothing to extend
        b'[{"a":1}]',
    ],
)
def test_a_body_that_is_no_prefix_is_not_kept(first: bytes, general_calls: list[bytes]) -> None:
    reader = ContextReader()
    reader.parse(first)
    data = first[:-2] + b',{"b":2}]}'
    same(reader.parse(data), parse_context(data))
    assert general_calls == [first, data]


def test_interleaved_conversations_each_extend_their_own(general_calls: list[bytes]) -> None:
    reader = ContextReader()
    conversations = [[compact({"c": c})] for c in range(context_reader.KEEP)]
    for turn in range(4):
        for c, messages in enumerate(conversations):
            data = body(*messages)
            same(reader.parse(data), parse_context(data))
            messages.append(compact({"c": c, "turn": turn}))
    assert len(general_calls) == context_reader.KEEP  # each conversation's first call only

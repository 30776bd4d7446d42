"""`ContextReader.parse` gives exactly `parse_context`, reading only what a body adds."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from roller.capture import context_reader
from roller.capture.context import ParsedContext, context_json, parse_context, parse_context_slowly
from roller.capture.context_reader import ContextReader
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.reader import iter_calls, iter_calls_shared, iter_context_json
from roller.finalize.attempt import finalize_attempt
from tests.export.real_captures import RealCaptures


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


# Claude Code 2.1's member order: the transcript second, the fixed part and settings after.
CC_HEAD = b'{"model":"m","messages":['
CC_TAIL = b'],"system":[{"type":"text","text":"s\xc3\xa9"}],"tools":[{"name":"T"}],"stream":true}'


def cc_body(*messages: bytes, tail: bytes = CC_TAIL) -> bytes:
    return CC_HEAD + b",".join(messages) + tail


def test_a_transcript_before_other_members_is_read_by_what_it_adds(
    general_calls: list[bytes],
) -> None:
    reader = ContextReader()
    messages = [FIRST]
    values = []
    for n in range(5):
        data = cc_body(*messages)
        got = reader.parse(data)
        same(got, parse_context(data))
        assert list(got.value) == ["model", "messages", "system", "tools", "stream"]
        values.append(got.value)
        messages += [compact({"role": "assistant", "content": [{"n": n}]}), compact({"n": n})]
    assert general_calls == [cc_body(FIRST)]
    # each later value holds the earlier one's messages themselves, the other members too
    assert values[-1]["messages"][0] is values[0]["messages"][0]
    assert values[-1]["tools"] is values[0]["tools"]


def test_another_array_member_that_grows_is_read_by_what_it_adds(
    general_calls: list[bytes],
) -> None:
    """The members are found in the value, not named: a `tools` array that gains a tool
    with the transcript unchanged is the same kind of extension."""
    reader = ContextReader()
    first = cc_body(FIRST)
    reader.parse(first)
    data = first.replace(b'{"name":"T"}]', b'{"name":"T"},{"name":"U"}]')
    got = reader.parse(data)
    same(got, parse_context(data))
    assert got.value["tools"] == [{"name": "T"}, {"name": "U"}]
    assert general_calls == [first]


@pytest.mark.parametrize(
    "later",
    [
        # a member after the transcript changed: not the earlier body's bytes after it
        cc_body(FIRST, b'{"a":2}', tail=CC_TAIL.replace(b'"T"', b'"U"')),
        cc_body(FIRST, b'{"a":2}', tail=CC_TAIL.replace(b"true", b"false")),
        # the last message's own content grew: a nested array, not a member's
        cc_body(b'{"role":"user","content":["task","more"]}'),
        # the body shortened, or only reordered
        cc_body(),
        b'{"messages":[' + FIRST + b'],"model":"m"' + CC_TAIL[1:],
    ],
)
def test_a_body_that_extends_no_array_of_the_earlier_one_takes_the_general_path(
    later: bytes, general_calls: list[bytes]
) -> None:
    reader = ContextReader()
    first = cc_body(b'{"role":"user","content":["task"]}') if b"more" in later else cc_body(FIRST)
    reader.parse(first)
    same(reader.parse(later), parse_context(later))
    assert general_calls == [first, later]


def test_after_an_extension_only_the_grown_member_is_looked_at(
    general_calls: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The members after the transcript are written once per conversation (`_arrays`),
    not at every call: its next body is compared at the transcript's place alone."""
    written: list[object] = []
    dumps = context_reader.orjson.dumps

    class Counted:
        JSONDecodeError = context_reader.orjson.JSONDecodeError
        JSONEncodeError = context_reader.orjson.JSONEncodeError
        loads = staticmethod(context_reader.orjson.loads)

        @staticmethod
        def dumps(value: object) -> bytes:
            written.append(value)
            return dumps(value)

    monkeypatch.setattr(context_reader, "orjson", Counted)
    reader = ContextReader()
    messages = [FIRST]
    for n in range(4):
        data = cc_body(*messages)
        same(reader.parse(data), parse_context(data))
        messages.append(compact({"n": n}))
    keys = [v for v in written if v in ("model", "messages", "system", "tools", "stream")]
    assert keys == ["stream", "tools", "system", "messages", "model"]  # the first body's
    # after the first body, each body's new message alone is written (to check it)
    later = written[written.index("model") + 1 :]
    assert later == [{"n": 0}, {"n": 1}, {"n": 2}]


def _conversation(reader: ContextReader, bodies: list[bytes]) -> list[ParsedContext]:
    out = []
    for data in bodies:
        got = reader.parse(data)
        same(got, parse_context(data))
        out.append(got)
    return out


def marked(message: dict[str, object]) -> bytes:
    """A message with Claude Code's `cache_control` marker on its last block."""
    return compact({**message, "content": [{"type": "text", "text": "x", "cache_control": {}}]})


def test_a_last_message_sent_again_changed_is_read_again_with_what_follows(
    general_calls: list[bytes],
) -> None:
    """Claude Code moves its cache marker to the newest message: the previous last
    message comes again without it. The messages before it are the earlier objects."""
    reader = ContextReader()
    plain = [
        compact({"role": "user", "content": [{"type": "text", "text": f"m{i}"}]}) for i in range(6)
    ]
    mark = [marked({"role": "user", "i": i}) for i in range(6)]
    bodies = [cc_body(FIRST, *plain[:n], mark[n]) for n in range(5)]
    # and one whose two last messages changed, and one resent unchanged
    bodies.append(cc_body(FIRST, *plain[:3], mark[0], mark[5]))
    bodies.append(bodies[-1])
    got = _conversation(reader, bodies)
    assert general_calls == [bodies[0]]
    for earlier, later in itertools.pairwise(got):
        shared = later.value["messages"][0]
        assert shared is earlier.value["messages"][0]
    assert got[4].value["messages"][3] is got[3].value["messages"][3]
    assert got[5].value["messages"][3] is got[4].value["messages"][3]  # (plain[2])


@pytest.mark.parametrize(
    "later",
    [
        cc_body(b'{"role":"user","content":"other"}', b'{"a":1}'),  # no element shared
        cc_body(FIRST, b'{"a":1}', b"NaN"),  # a new element orjson does not take
        cc_body(FIRST, b'{"a": 1}'),  # one not written as orjson writes it
    ],
)
def test_elements_the_shortcut_cannot_prove_give_the_general_result(
    later: bytes, general_calls: list[bytes]
) -> None:
    reader = ContextReader()
    first = cc_body(FIRST, b'{"a":0}')
    reader.parse(first)
    same(reader.parse(later), parse_context(later))
    assert general_calls == [first, later]


def test_a_captures_calls_read_once_per_conversation_are_its_records(
    real_captures: RealCaptures, tmp_path: Path
) -> None:
    """`iter_calls_shared` gives `iter_calls`' records, as `CallRecord`s, in compact/v2
    and compact/v3, their contexts sharing an earlier call's messages."""
    capture = real_captures["claude-code", "parallel"]
    v3 = AttemptPaths(tmp_path / "attempt")
    shutil.copytree(capture.paths.root, v3.root)
    finalize_attempt(v3, "compact/v3")
    assert v3.contexts.exists()
    for paths in (capture.paths, v3):
        shared = list(iter_calls_shared(paths))
        assert shared == list(iter_calls(paths))
        assert {type(c) for c in shared} == {CallRecord}
        messages = [c.context["messages"] for c in shared if c.protocol == "anthropic-messages"]
        firsts = {id(m[0]) for m in messages}
        assert len(firsts) < len(messages)  # later calls hold earlier calls' messages
    # A check of compact/v3 reads its stored contexts so too (it must, to know which are
    # null), and `roller export calls` (the contexts' record JSON): `iter_calls`' records.
    checked = list(iter_calls(v3, checking=True))
    with_json = list(iter_context_json(v3))
    plain = list(iter_calls(v3))
    assert checked == plain and [c for c, _ in with_json] == plain
    assert [j for _, j in with_json] == [
        None if c.context is None else context_json(c.context) for c in plain
    ]
    for calls in (checked, [c for c, _ in with_json]):
        messages = [c.context["messages"] for c in calls if c.protocol == "anthropic-messages"]
        assert len({id(m[0]) for m in messages}) < len(messages)

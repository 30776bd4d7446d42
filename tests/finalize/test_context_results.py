"""`ContextResults.of` gives exactly the codec's `context_tool_results`, reading only the
messages a resent transcript adds (bodies parsed by `ContextReader`, as finalize does)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from roller.capture.context_reader import ContextReader
from roller.finalize import context_results
from roller.finalize.context_results import ContextResults
from roller.wire import codec_for

ANTHROPIC = codec_for("anthropic-messages")
CHAT = codec_for("openai-chat-completions")


def _body(messages: list[Any]) -> bytes:
    value = {"model": "m", "messages": messages}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _turn(conversation: str, n: int, error: bool | None) -> list[Any]:
    tool_id = f"toolu_{conversation}_{n}"
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id}
    result["content"] = [{"type": "text", "text": f"out {n}"}] if n % 2 else f"out {n}"
    if error is not None:
        result["is_error"] = error
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "t"}]},
        {"role": "user", "content": [result, {"type": "text", "text": "go on"}]},
    ]


def test_interleaved_resent_conversations_give_the_codecs_results() -> None:
    reader, results = ContextReader(), ContextResults()
    transcripts: dict[str, list[Any]] = {c: [{"role": "user", "content": c}] for c in "abc"}
    reused = 0
    for n in range(12):
        for c in "abc" if n % 3 else "ba":
            context = reader.parse(_body(transcripts[c])).value
            got = results.of(ANTHROPIC, context)
            assert got == tuple(ANTHROPIC.context_tool_results(context))
            reused += n > 0 and len(got) > 1
            transcripts[c] += _turn(c, n, (None, True, False)[n % 3])
    assert reused  # the incremental path did run


def test_a_transcript_that_changed_is_read_whole() -> None:
    reader, results = ContextReader(), ContextResults()
    first = [{"role": "user", "content": "x"}, *_turn("a", 0, None)]
    results.of(ANTHROPIC, reader.parse(_body(first)).value)
    edited = [{"role": "user", "content": "x"}, *_turn("a", 9, True), *_turn("a", 1, None)]
    context = reader.parse(_body(edited)).value
    got = results.of(ANTHROPIC, context)
    assert got == tuple(ANTHROPIC.context_tool_results(context))
    assert [r.id for r in got] == ["toolu_a_9", "toolu_a_1"]


def test_other_protocols_and_odd_contexts_take_the_codec() -> None:
    results = ContextResults()
    chat = {"messages": [{"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    assert results.of(CHAT, chat) == tuple(CHAT.context_tool_results(chat))
    for odd in (None, {"messages": "no"}, {"messages": []}, {"messages": [1, "x"]}):
        assert results.of(ANTHROPIC, odd) == tuple(
            ANTHROPIC.context_tool_results(odd)  # type: ignore[arg-type]
        )


def test_a_last_message_sent_again_changed_keeps_the_results_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Claude Code sends its previous last message again without its cache marker: the
    results of the messages before it are kept, those of it and after are read again."""
    shared: list[int] = []
    real = context_results.shared_count

    def counted(earlier: Any, later: Any) -> int:
        shared.append(real(earlier, later))
        return shared[-1]

    monkeypatch.setattr(context_results, "shared_count", counted)
    reader, results = ContextReader(), ContextResults()
    transcript: list[Any] = [{"role": "user", "content": "x"}]
    for n in range(6):
        last = {**transcript[-1], "cache_control": {"type": "ephemeral"}}  # the newest only
        context = reader.parse(_body([*transcript[:-1], last])).value
        got = results.of(ANTHROPIC, context)
        assert got == tuple(ANTHROPIC.context_tool_results(context))
        assert len(got) == n
        transcript += _turn("a", n, n % 2 == 0)
    # every later context shared all its messages but the re-sent last one
    assert shared == [2 * n for n in range(5)]

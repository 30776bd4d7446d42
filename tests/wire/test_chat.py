"""OpenAI chat view of every protocol (`Codec.chat`, roller.wire.chat): the round trip over
real captured calls of Claude Code (Anthropic Messages), OpenCode and Pi (Chat
Completions), Codex and Pi (Responses) and Gemini CLI (Gemini), and hand-made requests
for the shapes the mock-model runs do not produce (thinking, images, interleaved tool
results, reasoning items, ids Gemini did not name)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from roller.capture.models import CallRecord
from roller.wire import PROTOCOL_NAMES, Codec, codec_for, codec_named
from roller.wire.types import ProtocolName
from tests.export.real_captures import RealCaptures


def _calls(real_captures: RealCaptures, protocol: str) -> list[CallRecord]:
    return [
        c
        for capture in real_captures.values()
        for c in capture.calls
        if c.protocol == protocol and c.kind == "generation"
    ]


def _codec(protocol: str) -> Codec:
    codec = codec_named(protocol)
    assert codec is not None
    return codec


def _same_messages(protocol: str, a: list[Any], b: list[Any]) -> bool:
    key = _codec(protocol).item_key
    return [key(i) for i in a] == [key(i) for i in b]


@pytest.mark.parametrize(
    ("protocol", "prompt"),
    [
        ("anthropic-messages", 100 + 30 + 7),  # its input count leaves cache reads/writes out
        ("openai-chat-completions", 100),
        ("openai-responses", 100),
        ("gemini", 100),
    ],
)
def test_prompt_tokens_count_cached_tokens_once(protocol: ProtocolName, prompt: int) -> None:
    chat = codec_for(protocol).chat
    assert chat.prompt_tokens(100, 30, 7) == prompt
    assert chat.prompt_tokens(None, 30, 7) is None


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_round_trip_over_real_calls(real_captures: RealCaptures, protocol: str) -> None:
    """restore(view(request)) holds the same messages and system prompt, for every real
    call of the protocol; the reply restores to the output's history items."""
    calls = _calls(real_captures, protocol)
    assert len(calls) >= 8, f"too few real {protocol} calls: {len(calls)}"
    tool_messages = 0
    for call in calls:
        view = _codec(protocol).chat.request(call.context)
        assert view is not None
        back = _codec(protocol).chat.restore(view.messages)
        original = _codec(protocol).history(call.context)
        restored = _codec(protocol).history({**call.context, **back})
        assert original is not None and restored is not None
        assert _same_messages(protocol, original.items, restored.items), call.call_id
        assert restored.system == original.system, call.call_id
        # Chat validity: every tool message answers a tool call made before it.
        seen: set[str] = set()
        for message in view.plain():
            seen.update(c["id"] for c in message.get("tool_calls") or [])
            if message["role"] == "tool":
                tool_messages += 1
                assert message["tool_call_id"] in seen, (call.call_id, message)
        if call.output_complete:
            ids = [t.ref or t.id for t in call.tool_refs.emitted]
            reply = _codec(protocol).chat.reply(call.output, ids)
            items = _codec(protocol).history(_codec(protocol).chat.restore(reply.messages))
            assert items is not None
            assert _same_messages(protocol, _codec(protocol).output_items(call.output), items.items)
            emitted = [c["id"] for m in reply.plain() for c in m.get("tool_calls") or []]
            assert emitted == [t.id or t.ref for t in call.tool_refs.emitted]
    assert tool_messages > 0, "the real calls carry tool results"


def test_anthropic_blocks_map_to_chat_pieces_and_back() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    request = {
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "running"},
                    {"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {"cmd": "ls"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "raw", "input": "not json"},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "is_error": True,
                        "content": [{"type": "text", "text": "boom"}],
                    },
                    {"type": "document", "source": {"type": "text", "data": "doc"}},
                ],
            },
        ],
        "tools": [
            {"name": "sh", "description": "run", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
    }
    view = codec_for("anthropic-messages").chat.request(request)
    assert view is not None
    plain = view.plain()
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert plain[0]["content"] == "be brief"
    assert plain[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBO"},
    }
    assistant = plain[2]
    assert assistant["content"] == "running" and assistant["reasoning_content"] == "hmm"
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"cmd": "ls"},
        "not json",
    ]
    assert plain[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "a.txt"}
    assert plain[4]["content"] == "boom" and view.messages[4].result_envelope == {
        "type": "tool_result",
        "is_error": True,
    }
    assert plain[5]["content"][1]["type"] == "document"
    assert Counter(view.problems) == Counter(
        ["untranslated_part:document", "untranslated_tool:web_search_20250305"]
    )
    assert view.tools[0] == {
        "type": "function",
        "function": {"name": "sh", "parameters": {"type": "object"}, "description": "run"},
    }
    back = codec_for("anthropic-messages").chat.restore(view.messages)
    # The original order inside the user item (text before its tool results) comes back.
    assert [b["type"] for b in back["messages"][2]["content"]] == [
        "text",
        "tool_result",
        "tool_result",
        "document",
    ]
    assert back["messages"][2]["content"][2]["is_error"] is True
    assert _same_messages("anthropic-messages", request["messages"], back["messages"])
    assert back["system"] == [{"type": "text", "text": "be brief"}]


def test_responses_items_fold_into_assistant_messages() -> None:
    request = {
        "instructions": "sys",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "rules"}],
            },
            {"role": "user", "content": "hi"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "think"}],
                "encrypted_content": "QUJD",
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "namespace": "multi_agent_v1",
                "name": "spawn_agent",
                "arguments": '{"message": "go"}',
            },
            {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": "call_2",
                "name": "apply_patch",
                "input": "*** Begin",
            },
            {
                "type": "function_call_output",
                "id": "fco_1",
                "call_id": "call_1",
                "output": '{"agent_id": "a"}',
            },
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "ok"},
            {
                "type": "agent_message",
                "author": "/root/child",
                "content": [{"type": "input_text", "text": "done"}],
            },
        ],
    }
    view = codec_for("openai-responses").chat.request(request)
    assert view is not None
    plain = view.plain()
    assert [m["role"] for m in plain] == [
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    assistant = plain[3]
    assert assistant["reasoning_content"] == "think" and assistant["content"] is None
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "multi_agent_v1.spawn_agent", "arguments": '{"message": "go"}'},
        },
        {"id": "call_2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}},
    ]
    assert view.messages[3].origin()["envelopes"]["3"] == {
        "type": "function_call",
        "id": "fc_1",
        "namespace": "multi_agent_v1",
    }
    assert view.problems == ("untranslated_item:agent_message",)
    back = codec_for("openai-responses").chat.restore(view.messages)
    assert back["instructions"] == "sys"
    assert _same_messages("openai-responses", request["input"], back["input"])
    assert back["input"][3]["name"] == "spawn_agent" and back["input"][3]["id"] == "fc_1"


def test_gemini_ids_the_api_did_not_name() -> None:
    request = {
        "systemInstruction": {"parts": [{"text": "sys"}]},
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "go"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "plan", "thought": True},
                    {"functionCall": {"name": "ls", "args": {}}},
                    {"functionCall": {"name": "ls", "args": {"d": 1}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "ls", "response": {"output": "a"}}},
                    {
                        "functionResponse": {
                            "name": "ls",
                            "id": "given",
                            "response": {"output": "b"},
                        }
                    },
                ],
            },
        ],
    }
    view = codec_for("gemini").chat.request(request)
    assert view is not None
    plain = view.plain()
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "tool", "tool"]
    assert plain[1]["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBO"
    calls = [c["id"] for c in plain[2]["tool_calls"]]
    # The first call had neither an id nor an answering id: positional; the second takes
    # the id of the response that answers it (same name, same position).
    assert calls == ["ls#1.1", "given"]
    assert [m["tool_call_id"] for m in plain[3:]] == calls
    assert plain[2]["reasoning_content"] == "plan"
    assert "tool_id_minted" in view.problems
    back = codec_for("gemini").chat.restore(view.messages)
    assert _same_messages("gemini", request["contents"], back["contents"])
    assert back["systemInstruction"] == {"parts": [{"text": "sys"}]}


def _tool_messages(messages: list[Any]) -> list[tuple[Any, Any]]:
    return [(m["tool_call_id"], m.get("content")) for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_results_alone_holds_where_it_is_declared(
    real_captures: RealCaptures, protocol: str
) -> None:
    """`ChatForm.results_alone` (the viewer views only the items it has not seen): the
    tool messages of each item viewed by itself, in order, are the whole request's, on
    every real call of a protocol that declares it. Gemini does not: a result without an
    id takes the id of the call before it, which its item alone does not hold."""
    codec = _codec(protocol)
    if not codec.chat.results_alone:
        request = {
            "contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
            ]
        }
        view = codec.chat.request(request)
        assert view is not None
        alone = [codec.chat.items([i]).plain() for i in request["contents"]]
        assert _tool_messages(view.plain()) != _tool_messages([m for v in alone for m in v])
        return
    carried = 0
    for call in _calls(real_captures, protocol):
        view, history = codec.chat.request(call.context), codec.history(call.context)
        assert view is not None and history is not None
        alone = [m for item in history.items for m in codec.chat.items([item]).plain()]
        assert _tool_messages(alone) == _tool_messages(view.plain()), call.call_id
        carried += len(_tool_messages(alone))
    assert carried > 0, "the real calls carry tool results"


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_body_without_items_has_no_view(protocol: ProtocolName) -> None:
    chat = codec_for(protocol).chat
    assert chat.request({"messages": 3, "contents": 3, "input": 3}) is None
    assert chat.request("not a body") is None
    assert chat.reply({}).messages == ()


def test_chat_items_are_kept_as_sent(tmp_path: Path) -> None:
    items = [
        {"role": "system", "content": "s"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
            "reasoning_content": "r",
        },
    ]
    view = codec_for("openai-chat-completions").chat.request({"messages": items})
    assert view is not None and view.plain() == items
    assert codec_for("openai-chat-completions").chat.restore(view.messages)["messages"] == items

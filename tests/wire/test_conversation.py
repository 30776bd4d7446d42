"""The protocol-specific request facts every codec owns: JSON mode, where the conversation
is, the output as a history item, what "the same message" means, run-time tool loading
and server-held history — and that nothing outside roller.wire branches on a protocol."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from roller.wire import PROTOCOL_NAMES, codec_for, codec_named
from roller.wire.history import describe_key
from roller.wire.types import ProtocolName

ANTHROPIC = codec_for("anthropic-messages")
CHAT = codec_for("openai-chat-completions")
RESPONSES = codec_for("openai-responses")
GEMINI = codec_for("gemini")


@pytest.mark.parametrize(
    ("protocol", "request_body", "expected"),
    [
        ("anthropic-messages", {"output_format": {"type": "json_schema", "schema": {}}}, True),
        ("anthropic-messages", {"output_format": {"type": "text"}}, False),
        ("openai-chat-completions", {"response_format": {"type": "json_object"}}, True),
        ("openai-chat-completions", {"response_format": {"type": "json_schema"}}, True),
        ("openai-chat-completions", {"response_format": {"type": "text"}}, False),
        ("openai-chat-completions", {"text": {"format": {"type": "json_object"}}}, False),
        ("openai-responses", {"text": {"format": {"type": "json_schema"}}}, True),
        ("openai-responses", {"text": {"format": {"type": "text"}}}, False),
        ("openai-responses", {"response_format": {"type": "json_object"}}, False),
        ("gemini", {"generationConfig": {"responseMimeType": "application/json"}}, True),
        ("gemini", {"generationConfig": {"responseJsonSchema": {}}}, True),
        ("gemini", {"generationConfig": {"responseSchema": {}}}, True),
        ("gemini", {"generationConfig": {"responseMimeType": "text/plain"}}, False),
        ("gemini", {"generationConfig": "json"}, False),
    ],
)
def test_json_mode(protocol: ProtocolName, request_body: dict[str, Any], expected: bool) -> None:
    assert codec_for(protocol).json_mode(request_body) is expected


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("value", [None, [], "text", 3, {}, {"messages": "x", "input": 3}])
def test_every_request_fact_is_total(protocol: ProtocolName, value: Any) -> None:
    codec = codec_for(protocol)
    assert codec.json_mode(value) is False
    assert codec.history(value) is None or codec.history(value).items == []  # type: ignore[union-attr]
    assert codec.server_state(value) == []
    assert codec.output_items(value) == []
    assert codec.loads_tools(value) is None
    hash(codec.item_key(value))


@pytest.mark.parametrize(
    ("protocol", "body", "items", "system"),
    [
        (
            "anthropic-messages",
            {"system": [{"type": "text", "text": "S", "cache_control": {}}], "messages": [1]},
            [1],
            ("S",),
        ),
        ("openai-chat-completions", {"messages": [{"role": "system", "content": "S"}]}, None, None),
        ("openai-responses", {"instructions": "S", "input": "hi"}, ["hi"], ("S",)),
        (
            "gemini",
            {"systemInstruction": {"parts": [{"text": "S"}]}, "contents": []},
            [],
            ("S",),
        ),
    ],
)
def test_history_splits_items_system_tools_and_config(
    protocol: ProtocolName, body: dict[str, Any], items: list[Any] | None, system: Any
) -> None:
    body = {**body, "tools": [{"name": "t"}], "temperature": 0}
    history = codec_for(protocol).history(body)
    assert history is not None
    item_field = {"openai-responses": "input", "gemini": "contents"}.get(protocol, "messages")
    assert history.items == (items if items is not None else body[item_field])
    assert history.system == system
    assert history.tools == [{"name": "t"}]
    assert history.config == {k: v for k, v in body.items() if k not in (item_field, "tools")}


def test_output_items_are_what_the_protocol_resends() -> None:
    content = [{"type": "text", "text": "hi"}]
    assert ANTHROPIC.output_items({"role": "assistant", "content": content}) == [
        {"role": "assistant", "content": content}
    ]
    message = {"role": "assistant", "content": "hi"}
    assert CHAT.output_items({"choices": [{"message": message}]}) == [message]
    assert CHAT.output_items({"choices": []}) == []
    items = [{"type": "message"}, {"type": "function_call"}]
    assert RESPONSES.output_items({"output": items}) == items
    gemini_content = {"role": "model", "parts": [{"text": "hi"}]}
    assert GEMINI.output_items({"candidates": [{"content": gemini_content}]}) == [gemini_content]


def test_anthropic_same_message() -> None:
    key = ANTHROPIC.item_key
    plain = {"role": "user", "content": "hi"}
    assert key(plain) == key({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    assert key(plain) == key(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": ""},
                {"type": "thinking", "thinking": "…"},
            ],
        }
    )
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"a": 1, "b": 2}}
    assert key({"role": "assistant", "content": [use]}) == key(
        {"role": "assistant", "content": [{**use, "input": {"b": 2, "a": 1}}]}
    )
    assert key({"role": "assistant", "content": [use]}) != key(
        {"role": "assistant", "content": [{**use, "id": "t2"}]}
    )


def test_chat_same_message() -> None:
    key = CHAT.item_key
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    spaced = {**call, "function": {"name": "f", "arguments": '{ "a" : 1 }'}}
    assert key({"role": "assistant", "content": None, "tool_calls": [call]}) == key(
        {"role": "assistant", "content": "", "tool_calls": [spaced], "reasoning_content": "x"}
    )
    assert key({"role": "tool", "tool_call_id": "c1", "content": "ok"}) != key(
        {"role": "tool", "tool_call_id": "c2", "content": "ok"}
    )


def test_responses_same_message() -> None:
    key = RESPONSES.item_key
    assert key("hi") == key({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    assert key({"type": "reasoning", "summary": []}) is None
    shell = {"type": "local_shell_call", "id": "lsh_1", "status": "completed", "x": 1}
    assert key(shell) == key({**shell, "id": "lsh_2", "status": "in_progress"})
    fc = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "id": "fc_1"}
    assert key(fc) == key({**fc, "id": "fc_2"}) != key({**fc, "namespace": "ns"})
    assert describe_key(key(fc)) == "function_call"
    assert describe_key(key("hi")) == "user message"


def test_gemini_same_message() -> None:
    key = GEMINI.item_key
    call = {"functionCall": {"name": "f", "args": {"a": 1}}}
    assert key({"role": "model", "parts": [call, {"text": "…", "thought": True}]}) == key(
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}, "id": "x"}}]}
    )
    signed = {"inlineData": {"data": "d"}, "thoughtSignature": "s"}
    assert key({"role": "model", "parts": [signed]}) == key(
        {"role": "model", "parts": [{"inlineData": {"data": "d"}}]}
    )


def test_tool_loading_items() -> None:
    assert RESPONSES.loads_tools({"type": "tool_search_call"}) == "tool_search_call"
    assert RESPONSES.loads_tools({"type": "function_call"}) is None
    reference = {"type": "tool_reference", "tool_name": "t"}
    assert ANTHROPIC.loads_tools({"role": "user", "content": [reference]}) == "tool_reference"
    inside = {"type": "tool_result", "tool_use_id": "t", "content": [reference]}
    assert ANTHROPIC.loads_tools({"role": "user", "content": [inside]}) == "tool_reference"
    assert CHAT.loads_tools({"role": "tool", "content": [reference]}) is None
    assert GEMINI.loads_tools({"parts": [reference]}) is None


def test_only_responses_holds_history_at_the_provider() -> None:
    body = {"previous_response_id": "resp_1", "conversation": "conv_1", "input": []}
    assert RESPONSES.server_state(body) == ["previous_response_id", "conversation"]
    assert RESPONSES.server_state({**body, "previous_response_id": None}) == ["conversation"]
    for codec in (ANTHROPIC, CHAT, GEMINI):
        assert codec.server_state(body) == []


def test_codec_named_reads_names_from_disk() -> None:
    assert all(codec_named(name) is codec_for(name) for name in PROTOCOL_NAMES)
    assert codec_named(None) is None and codec_named("soap") is None


# Comparisons against a protocol's name: the branching the codecs replace.
_BRANCH = re.compile(
    r"""(==|!=)\s*["'](anthropic-messages|openai-chat-completions|openai-responses)["']"""
    r"""|protocol\s*(==|!=)\s*["']"""
)


def test_nothing_outside_wire_branches_on_a_protocol_name() -> None:
    root = Path(__file__).resolve().parents[2] / "src" / "roller"
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        if path.relative_to(root).parts[0] != "wire"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _BRANCH.search(line)
    ]
    assert found == []

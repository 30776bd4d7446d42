"""The official `anthropic` SDK parses every Messages reply the mock sends, streamed or not."""

from __future__ import annotations

import json
import re

import anthropic
import pytest

from tests.mock.conftest import ServeMock
from tests.mock.scenarios import LONG_TEXT, calls_scenario, text_scenario

BASH = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        "required": ["command"],
    },
}
USER = [{"role": "user", "content": "hello"}]


def client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)


def test_text_not_streamed(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    message = client(url).messages.create(model="claude-echo", max_tokens=50, messages=USER)
    assert re.fullmatch(r"msg_01\w{22}", message.id)
    assert message.model == "claude-echo"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == LONG_TEXT  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert re.fullmatch(r"req_011C\w{20}", message._request_id or "")


def test_text_streamed_event_by_event(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    with client(url).messages.stream(model="claude-echo", max_tokens=50, messages=USER) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[:2] == ["message_start", "content_block_start"]  # the SDK drops `ping`
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert kinds.count("text") > 3  # the SDK's per-delta text events
    assert final.content[0].text == LONG_TEXT  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 1


def test_parallel_tool_use_streamed_and_not(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    sdk = client(url)
    plain = sdk.messages.create(model="m", max_tokens=50, messages=USER, tools=[BASH])  # type: ignore[list-item]
    with sdk.messages.stream(model="m", max_tokens=50, messages=USER, tools=[BASH]) as stream:  # type: ignore[list-item]
        events = list(stream)
        streamed = stream.get_final_message()
    for message in (plain, streamed):
        assert message.stop_reason == "tool_use"
        assert [b.type for b in message.content] == ["text", "tool_use", "tool_use"]
        uses = message.content[1:]
        assert [u.input for u in uses] == [  # type: ignore[union-attr]
            {
                "command": "echo first-command-with-a-long-argument",
                "description": "Run echo first-command-with-a-long-argument",
            },
            {"command": "echo second", "description": "Run echo second"},
        ]
        ids = [u.id for u in uses]  # type: ignore[union-attr]
        assert all(re.fullmatch(r"toolu_01\w{22}", i) for i in ids) and len(set(ids)) == 2
    json_deltas = [e for e in events if e.type == "input_json"]
    assert len(json_deltas) > 4  # arguments arrive in fragments
    assert {u.id for u in plain.content[1:]}.isdisjoint(u.id for u in streamed.content[1:])  # type: ignore[union-attr]


def test_tool_result_turn_then_text(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    history = [
        *USER,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01x", "name": "Bash", "input": {"command": "ls"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01x", "content": "ok"}],
        },
    ]
    message = client(url).messages.create(model="m", max_tokens=50, messages=history, tools=[BASH])  # type: ignore[arg-type, list-item]
    assert message.content[0].text == "finished"  # type: ignore[union-attr]


def test_beta_path_count_tokens_and_models(serve_mock: ServeMock) -> None:
    mock, url = serve_mock(calls_scenario())
    sdk = client(url)
    beta = sdk.beta.messages.create(model="m", max_tokens=50, messages=USER)  # type: ignore[arg-type]
    assert beta.content[0].type == "text"
    assert mock.served[-1].path == "/v1/messages"  # `?beta=true` is a query, not a new endpoint
    counted = sdk.messages.count_tokens(model="m", messages=USER)  # type: ignore[arg-type]
    assert counted.input_tokens > 0
    assert [m.id for m in sdk.models.list()] == ["mock-model", "claude-mock"]
    assert sdk.models.retrieve("claude-anything").id == "claude-anything"


def test_claude_code_style_request_with_system_messages(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    agent = {
        "name": "Agent",
        "input_schema": {
            "type": "object",
            "properties": {"description": {"type": "string"}, "prompt": {"type": "string"}},
            "required": ["description", "prompt"],
        },
    }
    body = [
        {"role": "user", "content": [{"type": "text", "text": "Use a subagent to say hi"}]},
        {"role": "system", "content": "<env>Working directory: /w</env>"},
    ]
    with client(url).messages.stream(
        model="claude-opus-5-5", max_tokens=32000, messages=body, tools=[agent]
    ) as stream:  # type: ignore[arg-type, list-item]
        final = stream.get_final_message()
    assert final.content[0].type == "tool_use"
    assert json.loads(json.dumps(final.content[0].input))["prompt"].startswith("ROLLER-SUBTASK")  # type: ignore[union-attr]


def test_bad_requests_surface_as_sdk_errors(serve_mock: ServeMock) -> None:
    _, url = serve_mock()
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(url).messages.create(model="", max_tokens=5, messages=USER)  # type: ignore[arg-type]
    assert caught.value.status_code == 400
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]

"""The official `openai` SDK parses every Chat Completions and Responses reply of the mock."""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pytest

from roller.mock import parse_scenario
from tests.mock.conftest import ServeMock
from tests.mock.scenarios import LONG_TEXT, calls_scenario, text_scenario

SHELL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}
CHAT_TOOLS: Any = [{"type": "function", "function": {"name": "bash", "parameters": SHELL_SCHEMA}}]
CODEX_EXEC = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
RESPONSES_TOOLS: Any = [
    {"type": "function", "name": "exec_command", "parameters": CODEX_EXEC, "strict": False}
]
USER: Any = [{"role": "user", "content": "hello"}]


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)


# --- Chat Completions -------------------------------------------------------------------
def test_chat_text_not_streamed(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    completion = client(url).chat.completions.create(model="gpt-echo", messages=USER)
    assert re.fullmatch(r"chatcmpl-\w{29}", completion.id)
    assert completion.model == "gpt-echo"
    choice = completion.choices[0]
    assert (choice.message.content, choice.finish_reason) == (LONG_TEXT, "stop")
    assert completion.usage is not None and completion.usage.total_tokens > 0
    assert re.fullmatch(r"req_[0-9a-f]{32}", completion._request_id or "")


def test_chat_parallel_tool_calls_streamed_with_usage(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    with client(url).chat.completions.stream(
        model="m", messages=USER, tools=CHAT_TOOLS, stream_options={"include_usage": True}
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Running both."
    calls = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("bash", {"command": "echo first-command-with-a-long-argument"}),
        ("bash", {"command": "echo second"}),
    ]
    assert all(re.fullmatch(r"call_\w{24}", c.id) for c in calls)
    assert final.usage is not None and final.usage.completion_tokens > 0
    assert kinds.count("tool_calls.function.arguments.delta") > 4


def test_chat_raw_chunks_follow_the_wire_rules(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    sdk = client(url)
    chunks = list(
        sdk.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS, stream=True)
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    openers = [
        tc
        for chunk in chunks
        for choice in chunk.choices
        for tc in choice.delta.tool_calls or []
        if tc.id is not None
    ]
    assert [(tc.index, tc.function.name, tc.function.arguments) for tc in openers] == [  # type: ignore[union-attr]
        (0, "bash", ""),
        (1, "bash", ""),
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert all(c.usage is None for c in chunks)  # no usage chunk unless asked for
    with_usage = list(
        sdk.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    assert with_usage[-1].choices == [] and with_usage[-1].usage is not None
    assert len({c.id for c in with_usage}) == 1


def test_chat_json_mode_returns_the_schema_filled(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0.5},
        },
        "required": ["title", "confidence"],
        "additionalProperties": False,
    }
    completion = client(url).chat.completions.create(
        model="m",
        messages=USER,
        response_format={"type": "json_schema", "json_schema": {"name": "t", "schema": schema}},
    )
    assert json.loads(completion.choices[0].message.content or "") == {
        "title": "roller",
        "confidence": 0.5,
    }


# --- Responses --------------------------------------------------------------------------
def test_responses_text_not_streamed(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    response = client(url).responses.create(model="gpt-echo", input="hello")
    assert re.fullmatch(r"resp_[0-9a-f]{48}", response.id)
    assert response.model == "gpt-echo" and response.status == "completed"
    assert response.output_text == LONG_TEXT
    assert re.fullmatch(r"msg_[0-9a-f]{48}", response.output[0].id)  # type: ignore[union-attr]
    usage = response.usage
    assert usage is not None
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0


def test_responses_streamed_events_in_order(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    with client(url).responses.stream(model="m", input=USER, tools=RESPONSES_TOOLS) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    message_events = [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds[2:5] == message_events
    assert kinds.count("response.function_call_arguments.done") == 2
    assert kinds.count("response.output_item.done") == 3
    assert final.output_text == "Running both."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [json.loads(c.arguments) for c in calls] == [  # type: ignore[union-attr]
        {"cmd": "echo first-command-with-a-long-argument"},
        {"cmd": "echo second"},
    ]
    for call in calls:
        assert re.fullmatch(r"fc_[0-9a-f]{48}", call.id or "")  # type: ignore[union-attr]
        assert re.fullmatch(r"call_\w{24}", call.call_id)  # type: ignore[union-attr]


def test_responses_namespaced_call_carries_its_namespace(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    namespace = {
        "type": "namespace",
        "name": "multi_agent_v1",
        "tools": [
            {
                "type": "function",
                "name": "spawn_agent",
                "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
            },
            {
                "type": "function",
                "name": "wait_agent",
                "parameters": {"type": "object", "properties": {}},
            },
        ],
    }
    with client(url).responses.stream(model="fake-model", input=USER, tools=[namespace]) as stream:  # type: ignore[list-item]
        final = stream.get_final_response()
    (item,) = final.output
    assert item.type == "function_call"
    assert (item.name, item.namespace) == ("spawn_agent", "multi_agent_v1")  # type: ignore[union-attr]
    assert json.loads(item.arguments)["message"].startswith("ROLLER-SUBTASK depth=1")  # type: ignore[union-attr]


def test_responses_json_mode(serve_mock: ServeMock) -> None:
    _, url = serve_mock()
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    response = client(url).responses.create(
        model="m",
        input="x",
        text={"format": {"type": "json_schema", "name": "s", "schema": schema}},
    )
    assert json.loads(response.output_text) == {"ok": False}


def test_models_list_shape_parses_in_the_openai_sdk(serve_mock: ServeMock) -> None:
    _, url = serve_mock(parse_scenario('models = ["a", "b"]\n[[rules]]\ntext = "x"', "inline"))
    assert [m.id for m in client(url).models.list()] == ["a", "b"]


@pytest.mark.parametrize("stream", [False, True])
def test_bad_requests_surface_as_sdk_errors(serve_mock: ServeMock, stream: bool) -> None:
    _, url = serve_mock()
    with pytest.raises(openai.BadRequestError) as caught:
        client(url).responses.create(model="m", input=3, stream=stream)  # type: ignore[arg-type, call-overload]
    assert caught.value.status_code == 400
    assert "input" in caught.value.message

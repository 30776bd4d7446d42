"""Each dialect reads its protocol's request into the neutral view rules match against."""

from __future__ import annotations

import pytest

from roller.mock.dialects import DIALECTS, BadRequest
from tests.mock import views

AGENT_SCHEMA = {"type": "object", "properties": {"prompt": {"type": "string"}}}


def test_anthropic_system_entries_in_messages_are_system_text_not_user_text() -> None:
    view = views.anthropic(
        [
            {"role": "user", "content": "Use a subagent"},
            {"role": "system", "content": "<env>cwd /w</env>"},
        ],
        system=[{"type": "text", "text": "You are Claude Code."}],
    )
    assert view.user_texts == ["Use a subagent"]
    assert "You are Claude Code." in view.system_text and "<env>cwd /w</env>" in view.system_text
    assert view.last_message_role == "user"
    assert view.turn == 0


def test_anthropic_tool_results_with_reminder_text_make_the_message_a_tool_message() -> None:
    view = views.anthropic(
        [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "spawning"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Agent",
                        "input": {"prompt": "p"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "Async agent launched"}],
                    },
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                ],
            },
        ],
        tools=[{"name": "Agent", "input_schema": AGENT_SCHEMA}],
    )
    assert view.last_message_role == "tool"
    assert view.last_tool_result == "Async agent launched"
    assert view.turn == 1
    assert [(c.id, c.name, c.arguments) for c in view.calls] == [
        ("toolu_1", "Agent", {"prompt": "p"})
    ]
    assert view.result_for(view.calls[0]) is not None
    assert view.tools[0].schema == AGENT_SCHEMA


def test_chat_roles_tool_calls_and_results() -> None:
    view = views.chat(
        [
            {"role": "system", "content": "sys"},
            {"role": "developer", "content": "dev"},
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "task", "arguments": '{"prompt":"p"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "task", "arguments": "not json"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "r1"},
            {"role": "tool", "tool_call_id": "call_2", "content": "r2"},
        ],
        tools=["task", "bash"],
    )
    assert view.system_text == "sys\ndev"
    assert [c.arguments for c in view.calls] == [{"prompt": "p"}, "not json"]
    assert [e.text for e in view.tool_results] == ["r1", "r2"]
    assert view.last_message_role == "tool" and view.turn == 1
    assert [t.name for t in view.tools] == ["task", "bash"]


def test_responses_namespaces_agent_messages_and_encrypted_content() -> None:
    tools = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {
            "type": "namespace",
            "name": "collaboration",
            "tools": [{"type": "function", "name": "spawn_agent", "parameters": AGENT_SCHEMA}],
        },
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
        {"type": "web_search"},
    ]
    view = views.responses(
        [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "dev"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "reasoning", "summary": []},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "spawn_agent",
                "namespace": "collaboration",
                "arguments": '{"message": "m"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "aborted"},
            {
                "type": "agent_message",
                "author": "/root",
                "content": [
                    {"type": "input_text", "text": "Message from /root"},
                    {"type": "encrypted_content", "encrypted_content": "ROLLER-SUBTASK depth=1"},
                ],
            },
        ],
        tools=tools,
        instructions="base instructions",
    )
    assert [t.qualified_name for t in view.tools] == [
        "exec_command",
        "collaboration.spawn_agent",
        "apply_patch",
    ]
    assert view.offered("collaboration.spawn_agent") is view.offered("spawn_agent")
    assert view.calls[0].namespace == "collaboration"
    assert view.last_user_text == "Message from /root\nROLLER-SUBTASK depth=1"
    assert view.last_message_role == "user" and view.turn == 1
    assert view.system_text == "base instructions\ndev"


def test_responses_string_input_is_one_user_message() -> None:
    view = views.responses("hello")
    assert view.user_texts == ["hello"] and view.turn == 0


def test_gemini_function_calls_results_and_thoughts() -> None:
    view = views.gemini(
        [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "thinking", "thought": True},
                    {"functionCall": {"name": "invoke_agent", "args": {"prompt": "p"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "invoke_agent",
                            "response": {"output": "finished"},
                        }
                    }
                ],
            },
        ],
        systemInstruction={"parts": [{"text": "sys"}]},
        tools=[
            {
                "functionDeclarations": [
                    {"name": "invoke_agent", "parametersJsonSchema": AGENT_SCHEMA}
                ]
            }
        ],
    )
    assert view.model == "gemini-x"
    assert view.system_text == "sys"
    assert view.calls[0].id is None
    assert view.result_for(view.calls[0]) is not None  # matched by name: no ids on the wire
    assert view.last_tool_result == "finished"
    assert view.last_message_role == "tool" and view.turn == 1
    assert view.tools[0].schema == AGENT_SCHEMA


@pytest.mark.parametrize(
    ("view", "schema"),
    [
        (
            views.chat([{"role": "user", "content": "x"}], response_format={"type": "json_object"}),
            {},
        ),
        (
            views.chat(
                [{"role": "user", "content": "x"}],
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "n", "schema": AGENT_SCHEMA},
                },
            ),
            AGENT_SCHEMA,
        ),
        (
            views.responses("x", text={"format": {"type": "json_schema", "schema": AGENT_SCHEMA}}),
            AGENT_SCHEMA,
        ),
        (
            views.anthropic(
                [{"role": "user", "content": "x"}],
                output_format={"type": "json_schema", "schema": AGENT_SCHEMA},
            ),
            AGENT_SCHEMA,
        ),
        (
            views.gemini(
                [{"role": "user", "parts": [{"text": "x"}]}],
                generationConfig={
                    "responseMimeType": "application/json",
                    "responseSchema": AGENT_SCHEMA,
                },
            ),
            AGENT_SCHEMA,
        ),
    ],
)
def test_json_mode_is_recognised_in_every_protocol(view: object, schema: dict[str, object]) -> None:
    assert view.json_schema == schema  # type: ignore[attr-defined]
    assert view.kind == "json"  # type: ignore[attr-defined]


def test_title_requests_are_tool_less_and_mention_a_title() -> None:
    title = views.chat(
        [
            {"role": "system", "content": "You are a title generator."},
            {"role": "user", "content": "Generate a title for this conversation:"},
            {"role": "user", "content": "Use a subagent"},
        ]
    )
    assert title.kind == "title"
    assert views.chat([{"role": "user", "content": "hi"}]).kind == "agent"
    with_tools = views.chat([{"role": "user", "content": "Generate a title"}], tools=["bash"])
    assert with_tools.kind == "agent"


@pytest.mark.parametrize(
    ("protocol", "body", "message"),
    [
        ("anthropic-messages", {"messages": []}, "model"),
        ("anthropic-messages", {"model": "m", "messages": {}}, "messages"),
        ("openai-chat-completions", {"model": "m"}, "messages"),
        ("openai-responses", {"model": "m", "input": 3}, "input"),
        ("gemini", {"contents": "x"}, "contents"),
    ],
)
def test_wrong_shapes_are_bad_requests(
    protocol: str, body: dict[str, object], message: str
) -> None:
    with pytest.raises(BadRequest, match=message):
        DIALECTS[protocol].read(body, path_model="g", path_stream=False)  # type: ignore[index]


def test_odd_but_valid_json_inside_a_request_is_tolerated() -> None:
    view = views.anthropic(
        [None, 3, {"role": "user", "content": [None, {"type": "image"}, "x"]}, {"role": "tool"}],
        tools=[None, {"name": 3}, {"name": "ok"}],
    )
    assert [t.name for t in view.tools] == ["ok"]
    assert view.turn == 0

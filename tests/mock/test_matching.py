"""Rule matching and reply resolution: first match wins, unresolvable rules fall through."""

from __future__ import annotations

from typing import Any

import pytest

from roller.mock import parse_scenario
from roller.mock.request_view import RequestView
from tests.mock import views

SPAWN_SCHEMA = {
    "type": "object",
    "properties": {
        "description": {"type": "string"},
        "prompt": {"type": "string"},
        "run_in_background": {"type": "boolean"},
    },
    "required": ["description", "prompt"],
}


def decide(toml: str, view: RequestView) -> tuple[str, str, list[tuple[str, dict[str, Any]]]]:
    decision = parse_scenario(toml, "t.toml").respond(view)
    calls = [(c.name, c.arguments) for c in decision.reply.tool_calls]
    return decision.rule, decision.reply.text, calls


def user(text: str) -> RequestView:
    return views.chat([{"role": "user", "content": text}], tools=["bash"])


def test_first_matching_rule_wins() -> None:
    toml = """
[[rules]]
name = "one"
last_user_text_contains = "hello"
text = "first"
[[rules]]
name = "two"
text = "second"
"""
    assert decide(toml, user("hello there"))[:2] == ("one", "first")
    assert decide(toml, user("bye"))[:2] == ("two", "second")


def test_rule_whose_role_is_not_offered_falls_through() -> None:
    toml = """
[[rules]]
name = "spawn"
tool_calls = [{ role = "spawn", prompt = "p" }]
[[rules]]
name = "text"
text = "no spawn tool here"
"""
    assert decide(toml, user("go"))[0] == "text"
    offered = views.anthropic(
        [{"role": "user", "content": "go"}], tools=[{"name": "Agent", "input_schema": SPAWN_SCHEMA}]
    )
    assert decide(toml, offered)[0] == "spawn"


def test_unmatched_requests_get_the_defaults_by_kind() -> None:
    toml = """
default_text = "fallback"
title_text = "A title"
[[rules]]
last_user_text_contains = "never"
text = "x"
"""
    assert decide(toml, user("hi"))[:2] == ("default:agent", "fallback")
    title = views.chat([{"role": "user", "content": "Generate a title for this"}])
    assert decide(toml, title)[:2] == ("default:title", "A title")
    json_view = views.chat(
        [{"role": "user", "content": "x"}],
        response_format={
            "type": "json_schema",
            "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        },
    )
    assert decide(toml, json_view)[:2] == ("default:json", '{"a": 1}')


def test_agent_rules_never_answer_side_requests() -> None:
    toml = '[[rules]]\nname = "any"\ntext = "agent answer"'
    title = views.chat(
        [{"role": "system", "content": "Write a title"}, {"role": "user", "content": "x"}]
    )
    assert decide(toml, title)[0] == "default:title"
    toml_json = '[[rules]]\nname = "router"\nkind = "json"\njson = { model_choice = "pro" }'
    router = views.gemini(
        [{"role": "user", "parts": [{"text": "x"}]}],
        generationConfig={
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "object",
                "properties": {
                    "reasoning": {"type": "string"},
                    "model_choice": {"enum": ["flash", "pro"]},
                },
            },
        },
    )
    assert decide(toml_json, router)[:2] == (
        "router",
        '{"reasoning": "roller", "model_choice": "pro"}',
    )


MATCHERS = [
    ('protocol = "openai-chat-completions"', True),
    ('protocol = ["gemini", "openai-responses"]', False),
    ('model = "gpt-*"', True),
    ('model = "claude-*"', False),
    ("turn = 1", True),
    ("turn = { min = 2 }", False),
    ("turn = { max = 1 }", True),
    ('tools_offered_any = ["nope", "bash"]', True),
    ('tools_offered_all = ["bash", "task"]', False),
    ('tools_offered_none = ["task"]', True),
    ('tools_offered_none = ["bash"]', False),
    ('last_message_role = "tool"', True),
    ('last_message_role = "user"', False),
    ('system_contains = "ROLLER-SYS"', True),
    ('user_text_contains = "first question"', True),
    ('last_user_text_contains = "first question"', True),
    ('last_user_text_contains = "missing"', False),
    ('tool_result_contains = "exit code 2"', True),
    ('last_tool_result_contains = ["nope", "exit code"]', True),
    ('context_contains = "I will run ls"', True),
    ('called = ["shell"]', True),
    ('called = ["bash"]', True),
    ('called = ["spawn"]', False),
    ('not_called = ["spawn"]', True),
    ('not_called = ["shell"]', False),
    ('not_context_contains = "I will run"', False),
    ('not_context_contains = ["nope", "absent"]', True),
    ('called_with = "ls /x"', True),
    ('called_with = ["nope", "/y"]', False),
    ('not_called_with = "ls /y"', True),
    ('not_called_with = "ls /x"', False),
]


@pytest.mark.parametrize(("matcher", "expected"), MATCHERS)
def test_each_matcher(matcher: str, expected: bool) -> None:
    view = views.chat(
        [
            {"role": "system", "content": "ROLLER-SYS prompt"},
            {"role": "user", "content": "first question"},
            {
                "role": "assistant",
                "content": "I will run ls",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls /x"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": "ls: cannot access '/x'\nexit code 2",
            },
        ],
        tools=["bash"],
    )
    toml = f'[[rules]]\nname = "m"\n{matcher}\ntext = "hit"'
    assert (decide(toml, view)[0] == "m") is expected


def test_called_matches_namespaced_names_and_roles() -> None:
    view = views.responses(
        [
            {"type": "message", "role": "user", "content": "go"},
            {
                "type": "function_call",
                "call_id": "c",
                "id": "fc",
                "name": "spawn_agent",
                "namespace": "multi_agent_v1",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "c", "output": '{"agent_id": "A1"}'},
        ]
    )
    for name in ("spawn", "spawn_agent", "multi_agent_v1.spawn_agent"):
        assert decide(f'[[rules]]\nname = "m"\ncalled = ["{name}"]\ntext = "x"', view)[0] == "m"


def test_explicit_tool_calls_fill_required_arguments_and_given_ones_win() -> None:
    view = views.anthropic(
        [{"role": "user", "content": "go"}],
        tools=[
            {
                "name": "Write",
                "input_schema": {
                    "type": "object",
                    "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["file_path", "content"],
                },
            }
        ],
    )
    toml = '[[rules]]\ntool_calls = [{ tool = "Write", arguments = { content = "hello" } }]'
    assert decide(toml, view)[2] == [("Write", {"file_path": "roller", "content": "hello"})]


def test_several_calls_in_one_rule_are_parallel_and_all_must_resolve() -> None:
    view = views.chat([{"role": "user", "content": "go"}], tools=["bash"])
    both = """
[[rules]]
name = "two"
tool_calls = [{ role = "shell", command = "a" }, { role = "shell", command = "b" }]
[[rules]]
text = "t"
"""
    assert [a["command"] for _, a in decide(both, view)[2]] == ["a", "b"]
    partial = """
[[rules]]
name = "mixed"
tool_calls = [{ role = "shell", command = "a" }, { role = "wait" }]
[[rules]]
name = "t"
text = "t"
"""
    assert decide(partial, view)[0] == "t"


def test_reply_may_carry_text_and_calls_together() -> None:
    view = views.chat([{"role": "user", "content": "go"}], tools=["bash"])
    toml = '[[rules]]\ntext = "Running it."\ntool_calls = [{ role = "shell", command = "ls" }]'
    _, text, calls = decide(toml, view)
    assert text == "Running it." and calls == [("bash", {"command": "ls"})]

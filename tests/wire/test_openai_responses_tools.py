"""Where a Responses request's tool definitions are: `tools`, `additional_tools` items
(Codex 0.171.0 code mode, no `tools` at all) and `tool_search_output` items.

The shapes are Codex's own, from real requests (probed 2026-12-01; descriptions cut)."""

from __future__ import annotations

from typing import Any

from roller.wire.openai_responses import CODEC
from roller.wire.openai_responses.tools import definitions, tool_items

EXEC = {"type": "custom", "name": "exec", "description": "Run JavaScript code…", "format": {}}
WAIT = {"type": "function", "name": "wait", "strict": False, "parameters": {"type": "object"}}
SPAWN = {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}
ADDITIONAL: dict[str, Any] = {
    "type": "additional_tools",
    "id": "at_01a23303-b24f-7ec1-a269-eca1e437f5c2",
    "role": "developer",
    "tools": [
        {"type": "namespace", "name": "functions", "description": "", "tools": [EXEC, WAIT]},
        {"type": "namespace", "name": "collaboration", "tools": [SPAWN]},
    ],
}
CODE_MODE: dict[str, Any] = {
    "model": "gpt-6.2-sol",
    "stream": True,
    "input": [
        ADDITIONAL,
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
}
LOADED = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [SPAWN],
}
SEARCHED: dict[str, Any] = {
    "model": "gpt-5.5",
    "tools": [{"type": "function", "name": "exec_command"}, {"type": "tool_search"}],
    "input": [
        {"type": "message", "role": "user", "content": "go"},
        {
            "type": "tool_search_call",
            "id": "tsc_0001",
            "call_id": "call_ts1",
            "status": "completed",
            "execution": "client",
            "arguments": {"query": "spawn agent", "limit": 8},
        },
        {
            "type": "tool_search_output",
            "id": "tso_01a23308-0647-7b13-a2eb-656b1cf54ae4",
            "call_id": "call_ts1",
            "status": "completed",
            "execution": "client",
            "tools": [LOADED],
        },
    ],
}


def test_code_mode_tools_are_the_additional_tools_item() -> None:
    assert "tools" not in CODE_MODE
    assert tool_items(CODE_MODE["input"]) == [ADDITIONAL]
    assert definitions(CODE_MODE) == ADDITIONAL["tools"]
    assert CODEC.offered_tools(CODE_MODE) == [
        "functions.exec",
        "functions.wait",
        "collaboration.spawn_agent",
    ]


def test_the_history_snapshot_holds_the_definitions_and_the_item_loads_tools() -> None:
    history = CODEC.history(CODE_MODE)
    assert history is not None
    assert history.tools == ADDITIONAL["tools"]
    assert history.items == CODE_MODE["input"]  # the item stays in the history, verbatim
    assert "tools" not in history.config
    assert CODEC.loads_tools(ADDITIONAL) == "additional_tools"


def test_tools_loaded_by_tool_search_join_the_static_ones() -> None:
    assert definitions(SEARCHED) == [*SEARCHED["tools"], LOADED]
    assert CODEC.offered_tools(SEARCHED) == ["exec_command", "multi_agent_v1.spawn_agent"]
    history = CODEC.history(SEARCHED)
    assert history is not None and history.tools == [*SEARCHED["tools"], LOADED]
    kinds = [CODEC.loads_tools(i) for i in SEARCHED["input"]]
    assert kinds == [None, "tool_search_call", "tool_search_output"]


def test_a_definition_loaded_again_is_kept_once() -> None:
    again = {**SEARCHED, "tools": [LOADED]}
    assert definitions(again) == [LOADED]


def test_requests_without_tool_items_read_as_before() -> None:
    plain = {"model": "m", "input": "hi", "tools": [WAIT]}
    assert definitions(plain) == [WAIT]
    assert definitions({"model": "m", "input": "hi"}) is None
    assert definitions({"model": "m", "input": "hi", "tools": []}) == []
    history = CODEC.history({"model": "m", "input": [{"role": "user", "content": "hi"}]})
    assert history is not None and history.tools is None
    # an item of that type without a tool list carries no definitions
    broken = {"model": "m", "input": [{"type": "additional_tools", "tools": "x"}]}
    assert tool_items(broken["input"]) == [] and definitions(broken) is None

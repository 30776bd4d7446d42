"""A client `tool_search` (Codex 0.171.0 with gpt-5.5 defers its subagent tools behind
it): the mock calls it with a `tool_search_call` item and offers what its output loaded.
The shapes are Codex's (tests/data/harnesses/codex/tool-search-single is the real run)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from roller.mock import load_scenario
from roller.mock.dialects import DIALECTS
from roller.mock.ids import IdMint
from roller.mock.request_view import RequestView
from tests.mock.test_code_mode import REQUESTS

DIALECT = DIALECTS["openai-responses"]
SCENARIO = REQUESTS.parent / "tool-search.toml"
TOOL_SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "# Tool discovery",
    "parameters": {
        "type": "object",
        "properties": {"limit": {"type": "number"}, "query": {"type": "string"}},
        "required": ["query"],
    },
}
SPAWN = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "tools": [
        {
            "type": "function",
            "name": "spawn_agent",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        }
    ],
}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}


def view_of(items: list[Any]) -> RequestView:
    body = {"model": "gpt-5.5", "input": items, "tools": [TOOL_SEARCH]}
    view = DIALECT.read(body, path_model=None, path_stream=False)
    return dataclasses.replace(view, body_size=len(json.dumps(body)))


def respond(items: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    view = view_of(items)
    decision = load_scenario(str(SCENARIO)).respond(view)
    return decision.rule, DIALECT.render(decision.reply, view, IdMint())["output"]


def test_the_search_is_called_with_its_own_item() -> None:
    assert [t.name for t in view_of([USER]).tools] == ["tool_search"]
    rule, (item,) = respond([USER])
    assert rule == "root: look the spawn tool up"
    assert item["type"] == "tool_search_call" and item["execution"] == "client"
    assert item["id"].startswith("tsc_") and item["call_id"].startswith("call_")
    assert item["arguments"] == {"query": "spawn agent", "limit": 8}


def test_what_the_search_loaded_is_offered_and_the_search_is_a_call() -> None:
    call = {"type": "tool_search_call", "call_id": "c1", "arguments": {"query": "spawn"}}
    loaded = {"type": "tool_search_output", "call_id": "c1", "tools": [SPAWN]}
    view = view_of([USER, call, loaded])
    assert "multi_agent_v1.spawn_agent" in {t.qualified_name for t in view.tools}
    assert [c.name for c in view.calls] == ["tool_search"]
    rule, (item,) = respond([USER, call, loaded])
    assert rule == "root: spawn"
    assert (item["type"], item["namespace"], item["name"]) == (
        "function_call",
        "multi_agent_v1",
        "spawn_agent",
    )


def test_the_streamed_search_call_is_one_item() -> None:
    view = view_of([USER])
    decision = load_scenario(str(SCENARIO)).respond(view)
    events = [e.decode() for e in DIALECT.render_stream(decision.reply, view, IdMint())]
    kinds = [json.loads(e.split("data: ", 1)[1])["type"] for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]

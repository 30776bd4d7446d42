"""The mock speaks code mode: it reads the tools of an `additional_tools` item, calls
nested tools from one `exec` script, looks deferred tools up, and reads its scripts back.

The requests are real Codex 0.171.0 first requests (tests/data/harnesses/codex/
code-mode-requests/: `sol-first` is the catalog default gpt-6.2-sol, v2 collaboration
tools called directly; `luna-first` gpt-5.6-luna, v1 tools deferred; `luna-lookup` a
later luna request whose history holds the `ALL_TOOLS` declarations of multi_agent_v1).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import openai

from roller.mock import code_mode, load_scenario
from roller.mock.dialects import DIALECTS
from roller.mock.ids import IdMint
from roller.mock.reply import ToolCallOut
from roller.mock.request_view import RequestView
from tests.mock.conftest import ServeMock

REQUESTS = Path(__file__).parents[1] / "data" / "harnesses" / "codex" / "code-mode-requests"
DIALECT = DIALECTS["openai-responses"]


def body(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REQUESTS / f"{name}.json").read_text())
    return data


def view_of(data: dict[str, Any]) -> RequestView:
    view = DIALECT.read(data, path_model=None, path_stream=False)
    return dataclasses.replace(view, body_size=len(json.dumps(data)))


def names(view: RequestView) -> dict[str, str | None]:
    return {t.qualified_name: t.via for t in view.tools}


def output_of(scenario: str, data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    view = view_of(data)
    decision = load_scenario(scenario).respond(view)
    rendered = DIALECT.render(decision.reply, view, IdMint())
    return decision.rule, rendered["output"]


def with_history(data: dict[str, Any], *items: dict[str, Any]) -> dict[str, Any]:
    return {**data, "input": [*data["input"], *items]}


def test_the_catalog_default_offers_direct_and_nested_tools() -> None:
    data = body("sol-first")
    assert "tools" not in data
    offered = names(view_of(data))
    # direct: the model calls these itself (the functions namespace is the top level)
    assert offered["collaboration.spawn_agent"] is None
    assert offered["collaboration.wait_agent"] is None
    assert offered["wait"] is None and offered["clock.sleep"] is None
    # nested: declared in exec's description, called from a script by these names
    assert offered["exec_command"] == "exec_command"
    assert offered["clock.curr_time"] == "clock__curr_time"
    # exec is how tools are called, never a tool a role resolves to
    assert "exec" not in offered
    assert view_of(data).deferred == ()


def test_nested_declarations_become_schemas() -> None:
    view = view_of(body("sol-first"))
    exec_command = next(t for t in view.tools if t.name == "exec_command")
    assert exec_command.schema["required"] == ["cmd"]
    props = exec_command.schema["properties"]
    assert props["cmd"] == {"type": "string"} and props["tty"] == {"type": "boolean"}
    assert props["prefix_rule"] == {"type": "array", "items": {"type": "string"}}
    assert props["sandbox_permissions"] == {
        "type": "string",
        "enum": ["use_default", "require_escalated"],
    }


def test_deferred_namespaces_are_looked_up_first() -> None:
    data = body("luna-first")
    view = view_of(data)
    assert view.deferred == ("multi_agent_v1",)
    assert "multi_agent_v1.spawn_agent" not in names(view)
    rule, output = output_of("spawn-one", data)
    assert rule == "root: spawn: look up tools"
    (item,) = output
    assert (item["type"], item["name"]) == ("custom_tool_call", "exec")
    assert item["input"] == code_mode.lookup_script(["multi_agent_v1"])
    assert 'startsWith("multi_agent_v1__")' in item["input"]


def test_looked_up_declarations_offer_the_deferred_tools() -> None:
    view = view_of(body("luna-lookup"))
    assert view.deferred == ()
    offered = names(view)
    assert offered["multi_agent_v1.spawn_agent"] == "multi_agent_v1__spawn_agent"
    assert offered["multi_agent_v1.wait_agent"] == "multi_agent_v1__wait_agent"
    wait = next(t for t in view.tools if t.qualified_name == "multi_agent_v1.wait_agent")
    assert wait.schema["required"] == ["targets"]


def test_a_lookup_with_no_declarations_is_not_repeated() -> None:
    data = body("luna-first")
    lookup = {
        "type": "custom_tool_call",
        "call_id": "call_1",
        "name": "exec",
        "input": code_mode.lookup_script(["multi_agent_v1"]),
    }
    empty = {"type": "custom_tool_call_output", "call_id": "call_1", "output": []}
    view = view_of(with_history(data, lookup, empty))
    assert view.deferred == ()
    rule, output = output_of("spawn-one", with_history(data, lookup, empty))
    assert rule == "root: finish" and output[0]["type"] == "message"


def test_a_nested_spawn_is_one_exec_script() -> None:
    rule, output = output_of("spawn-one", body("luna-lookup"))
    assert rule == "root: spawn"
    (item,) = output
    assert (item["type"], item["name"]) == ("custom_tool_call", "exec")
    assert item["id"].startswith("ctc_") and item["call_id"].startswith("call_")
    ((namespace, name, arguments),) = code_mode.nested_calls(item["input"])
    assert (namespace, name) == ("multi_agent_v1", "spawn_agent")
    assert arguments["message"].startswith("ROLLER-SUBTASK depth=1 id=a")


def test_direct_tools_are_called_directly_and_shell_through_exec() -> None:
    rule, output = output_of("spawn-one", body("sol-first"))
    assert rule == "root: spawn"
    (item,) = output
    assert (item["type"], item["namespace"], item["name"]) == (
        "function_call",
        "collaboration",
        "spawn_agent",
    )
    rule, output = output_of("tool-error", body("sol-first"))
    (item,) = output
    assert item["type"] == "custom_tool_call"
    assert code_mode.nested_calls(item["input"]) == [
        (None, "exec_command", {"cmd": "ls /nonexistent-roller-path"})
    ]


def test_the_history_of_a_script_is_its_nested_calls_and_their_results() -> None:
    data = body("luna-lookup")
    _, (spawns,) = output_of("spawn-two-parallel", data)
    assert len(code_mode.nested_calls(spawns["input"])) == 2
    result = {
        "type": "custom_tool_call_output",
        "call_id": spawns["call_id"],
        "output": [
            {"type": "input_text", "text": "Script completed\nWall time 0.2 seconds\nOutput:\n"},
            {"type": "input_text", "text": '{"agent_id":"agent-a","nickname":"Hooke"}'},
            {"type": "input_text", "text": '{"agent_id":"agent-b","nickname":"Parfit"}'},
        ],
    }
    later = with_history(data, spawns, result)
    view = view_of(later)
    assert [c.name for c in view.calls] == ["spawn_agent", "spawn_agent"]
    assert {c.id for c in view.calls} == {spawns["call_id"]}
    rule, (wait,) = output_of("spawn-two-parallel", later)
    assert rule == "root: wait"
    ((_, name, arguments),) = code_mode.nested_calls(wait["input"])
    assert name == "wait_agent" and arguments["targets"] == ["agent-a", "agent-b"]


def _exec_output(call_id: str, *documents: str) -> dict[str, Any]:
    texts = ["Script completed\nWall time 0.1 seconds\nOutput:\n", *documents]
    return {
        "type": "custom_tool_call_output",
        "call_id": call_id,
        "output": [{"type": "input_text", "text": t} for t in texts],
    }


def test_a_v1_parent_waits_again_until_every_child_is_reported() -> None:
    """Codex 0.171.0's v1 `wait_agent` returns at the first target's final status; the
    parent waits for the rest before its last reply, since `codex exec` ends the turn
    and stops any child still running (a CI run lost child b's `task_complete` so)."""
    data = body("luna-lookup")
    _, (spawns,) = output_of("spawn-two-parallel", data)
    spawned = _exec_output(
        spawns["call_id"],
        '{"agent_id":"agent-a","nickname":"Hooke"}',
        '{"agent_id":"agent-b","nickname":"Parfit"}',
    )
    later = with_history(data, spawns, spawned)
    _, (wait,) = output_of("spawn-two-parallel", later)
    a_done = '{"status":{"agent-a":{"completed":"done"}},"timed_out":false}'
    later = with_history(later, wait, _exec_output(wait["call_id"], a_done))
    rule, (again,) = output_of("spawn-two-parallel", later)
    assert rule == "root: wait for the rest (v1)"
    ((_, name, arguments),) = code_mode.nested_calls(again["input"])
    assert name == "wait_agent" and arguments["targets"] == ["agent-b"]
    b_done = '{"status":{"agent-b":{"completed":"done"}},"timed_out":false}'
    later = with_history(later, again, _exec_output(again["call_id"], b_done))
    rule, (reply,) = output_of("spawn-two-parallel", later)
    assert rule == "root: finish" and reply["type"] == "message"


def test_script_round_trip_keeps_calls_and_skips_text_inside_arguments() -> None:
    calls = [
        ToolCallOut("spawn_agent", {"message": "say tools.fake({})"}, "collaboration", via="c__s"),
        ToolCallOut("exec_command", {"cmd": "ls"}, via="exec_command"),
    ]
    script = code_mode.script_for(calls)
    assert code_mode.nested_calls(script) == [
        ("c", "s", {"message": "say tools.fake({})"}),
        (None, "exec_command", {"cmd": "ls"}),
    ]
    assert code_mode.nested_calls("await tools.exec_command(args);") == [
        (None, "exec_command", None)
    ]


def test_requests_without_the_exec_item_are_not_code_mode() -> None:
    plain = {"model": "m", "input": [{"type": "additional_tools", "tools": []}]}
    assert code_mode.read_tools(plain["input"], [], []) is None
    view = view_of(plain)
    assert view.tools == () and view.deferred == ()


def test_the_openai_sdk_reads_the_streamed_exec_call(serve_mock: ServeMock) -> None:
    mock, url = serve_mock("tool-error")
    data = body("sol-first")
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    with client.responses.stream(model=data["model"], input=data["input"]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds.count("response.custom_tool_call_input.delta") > 1
    assert "response.custom_tool_call_input.done" in kinds
    (item,) = final.output
    assert item.type == "custom_tool_call" and item.name == "exec"
    assert code_mode.nested_calls(item.input) == [
        (None, "exec_command", {"cmd": "ls /nonexistent-roller-path"})
    ]
    assert [s.rule for s in mock.served] == ["run a failing command"]

"""Role resolution and role-specific arguments, per harness tool (harness notes)."""

from __future__ import annotations

import json
from typing import Any

from roller.mock.request_view import RequestView
from roller.mock.roles import (
    CallSpec,
    authored_user_texts,
    calls_of,
    pending_agent_ids,
    quotes_a_task,
    reported_agent_ids,
    resolve_call,
    role_of,
    spawned_agent_ids,
)
from tests.mock import views


def resolve(view: RequestView, role: str, **params: Any) -> tuple[str | None, dict[str, Any]]:
    call = resolve_call(CallSpec(role=role, params=params), view)  # type: ignore[arg-type]
    assert call is not None
    return call.namespace, call.arguments


def responses_with(*tools: dict[str, Any], items: Any = "go") -> RequestView:
    return views.responses(items, tools=list(tools))


def ns(name: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {"type": "namespace", "name": name, "tools": list(tools)}


def fn(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return {"type": "function", "name": name, "parameters": schema}


S = {"type": "string"}


def test_spawn_agent_v1_gets_message_and_keeps_its_namespace() -> None:
    view = responses_with(ns("multi_agent_v1", fn("spawn_agent", {"message": S, "agent_type": S})))
    assert resolve(view, "spawn", prompt="p", description="d") == (
        "multi_agent_v1",
        {"message": "p"},
    )


def test_spawn_agent_v2_task_name_is_sanitised_and_fork_maps_to_fork_turns() -> None:
    v2 = fn(
        "spawn_agent",
        {"task_name": S, "message": S, "fork_turns": {"enum": ["all", "none"]}},
        ["task_name", "message"],
    )
    view = responses_with(ns("collaboration", v2))
    _, args = resolve(view, "spawn", prompt="p", description="Roller Subtask #1!")
    assert args == {"task_name": "roller_subtask_1", "message": "p"}
    _, forked = resolve(view, "spawn", prompt="p", name="kid", fork=False)
    assert forked == {"task_name": "kid", "message": "p", "fork_turns": "none"}


def test_harness_constants_for_opencode_task_and_gemini_invoke_agent() -> None:
    opencode = views.anthropic(
        [{"role": "user", "content": "go"}],
        tools=[
            {
                "name": "task",
                "input_schema": {
                    "type": "object",
                    "properties": {"description": S, "prompt": S, "subagent_type": S},
                    "required": ["description", "prompt", "subagent_type"],
                },
            }
        ],
    )
    assert resolve(opencode, "spawn", prompt="p")[1] == {
        "description": "roller subtask",
        "prompt": "p",
        "subagent_type": "general",
    }
    gemini = views.gemini(
        [{"role": "user", "parts": [{"text": "go"}]}],
        tools=[
            {
                "functionDeclarations": [
                    {
                        "name": "invoke_agent",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {
                                "agent_name": {"type": "STRING"},
                                "prompt": {"type": "STRING"},
                            },
                            "required": ["agent_name", "prompt"],
                        },
                    }
                ]
            }
        ],
    )
    assert resolve(gemini, "spawn", prompt="p")[1] == {"agent_name": "generalist", "prompt": "p"}


def test_prompt_goes_where_each_harness_expects_it() -> None:
    for name, prop in (
        ("delegate_task", "goal"),
        ("sessions_spawn", "task"),
        ("subagent", "prompt"),
    ):
        view = views.anthropic(
            [{"role": "user", "content": "go"}],
            tools=[
                {
                    "name": name,
                    "input_schema": {
                        "type": "object",
                        "properties": {prop: S, "label": S},
                        "required": [],
                    },
                }
            ],
        )
        assert resolve(view, "spawn", prompt="p")[1] == {prop: "p"}


def test_open_schema_takes_the_common_name() -> None:
    view = views.chat(
        [{"role": "user", "content": "go"}], tools=["Agent"]
    )  # schema {"type": "object"}
    assert resolve(view, "spawn", prompt="p")[1] == {"prompt": "p"}


def test_background_is_only_set_when_the_scenario_asks() -> None:
    view = views.anthropic(
        [{"role": "user", "content": "go"}],
        tools=[
            {
                "name": "agent",
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "description": S,
                        "prompt": S,
                        "subagent_type": S,
                        "run_in_background": {"type": "boolean"},
                    },
                },
            }
        ],
    )
    assert resolve(view, "spawn", prompt="p")[1] == {"description": "roller subtask", "prompt": "p"}
    assert resolve(view, "spawn", prompt="p", background=False)[1]["run_in_background"] is False


def test_shell_takes_argv_where_the_schema_wants_an_array() -> None:
    argv = responses_with(fn("shell", {"command": {"type": "array", "items": S}}, ["command"]))
    assert resolve(argv, "shell", command="ls /x")[1] == {"command": ["bash", "-lc", "ls /x"]}
    codex = responses_with(fn("exec_command", {"cmd": S, "workdir": S}, ["cmd"]))
    assert resolve(codex, "shell", command="ls")[1] == {"cmd": "ls"}


def test_write_and_read_use_the_tool_path_property() -> None:
    view = views.anthropic(
        [{"role": "user", "content": "go"}],
        tools=[
            {
                "name": "write",
                "input_schema": {
                    "type": "object",
                    "properties": {"filePath": S, "content": S},
                    "required": ["filePath", "content"],
                },
            },
            {
                "name": "read",
                "input_schema": {
                    "type": "object",
                    "properties": {"filePath": S},
                    "required": ["filePath"],
                },
            },
        ],
    )
    assert resolve(view, "write", path="a.txt", content="x")[1] == {
        "filePath": "a.txt",
        "content": "x",
    }
    assert resolve(view, "read", path="a.txt")[1] == {"filePath": "a.txt"}


def test_wait_v1_targets_the_agents_the_spawn_results_named() -> None:
    items = [
        {"type": "message", "role": "user", "content": "go"},
        {
            "type": "function_call",
            "call_id": "c1",
            "id": "fc1",
            "name": "spawn_agent",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "id": "fc2",
            "name": "spawn_agent",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"agent_id": "A1", "nickname": "Halley"}',
        },
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": '{"agent_id": "A2", "nickname": "Curie"}',
        },
        {
            "type": "function_call",
            "call_id": "c3",
            "id": "fc3",
            "name": "exec_command",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "c3", "output": '{"agent_id": "not-a-spawn"}'},
    ]
    wait = fn(
        "wait_agent",
        {"targets": {"type": "array", "items": S}, "timeout_ms": {"type": "integer"}},
        ["targets"],
    )
    view = responses_with(ns("multi_agent_v1", wait), items=items)
    assert spawned_agent_ids(view) == ["A1", "A2"]
    assert resolve(view, "wait") == (
        "multi_agent_v1",
        {"targets": ["A1", "A2"], "timeout_ms": 30000},
    )
    v2 = responses_with(
        ns("collaboration", fn("wait_agent", {"timeout_ms": {"type": "integer"}})), items=items
    )
    assert resolve(v2, "wait", timeout_ms=5)[1] == {"timeout_ms": 5}


def _v1_exec_spawned(*later: dict[str, Any]) -> list[dict[str, Any]]:
    """A v1 context whose one spawn result names A1 and A2, one JSON document a line (as
    a code-mode `exec` output does, Codex 0.171.0), then `later` items."""
    spawned = "Script completed\n" + '{"agent_id":"A1","nickname":"Carson"}\n'
    spawned += '{"agent_id":"A2","nickname":"Kuhn"}'
    exec_call = {
        "type": "function_call",
        "call_id": "x1",
        "id": "fc1",
        "name": "spawn_agent",
        "namespace": "multi_agent_v1",
        "arguments": "{}",
    }
    return [
        {"type": "message", "role": "user", "content": "go"},
        exec_call,
        {"type": "function_call_output", "call_id": "x1", "output": spawned},
        *later,
    ]


def _waited(call_id: str, status: dict[str, Any]) -> list[dict[str, Any]]:
    output = json.dumps({"status": status, "timed_out": False})
    return [
        {
            "type": "function_call",
            "call_id": call_id,
            "id": f"fc-{call_id}",
            "name": "wait_agent",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ]


def _notified(agent: str, status: Any) -> dict[str, Any]:
    text = json.dumps({"agent_path": agent, "status": status})
    return {
        "type": "message",
        "role": "user",
        "content": f"<subagent_notification>\n{text}\n</subagent_notification>",
    }


def test_wait_v1_waits_again_only_for_the_children_not_reported_final() -> None:
    """v1 `wait_agent` returns at the first target's final status (a CI run ended the
    parent's turn with one child still running), so the next wait names the rest."""
    wait = fn(
        "wait_agent",
        {"targets": {"type": "array", "items": S}, "timeout_ms": {"type": "integer"}},
        ["targets"],
    )

    def view(*later: dict[str, Any]) -> RequestView:
        return responses_with(ns("multi_agent_v1", wait), items=_v1_exec_spawned(*later))

    first = view()
    assert spawned_agent_ids(first) == ["A1", "A2"] and pending_agent_ids(first) == ["A1", "A2"]
    assert resolve(first, "wait")[1]["targets"] == ["A1", "A2"]
    one = view(*_waited("w1", {"A1": {"completed": "done"}}))
    assert reported_agent_ids(one) == {"A1"} and pending_agent_ids(one) == ["A2"]
    assert resolve(one, "wait")[1]["targets"] == ["A2"]
    running = view(*_waited("w1", {"A1": "running", "A2": "pending_init"}))
    assert pending_agent_ids(running) == ["A1", "A2"]
    both = view(*_waited("w1", {"A1": {"completed": "done"}}), _notified("A2", {"errored": "x"}))
    assert reported_agent_ids(both) == {"A1", "A2"} and pending_agent_ids(both) == []
    assert pending_agent_ids(view(_notified("A2", "shutdown"))) == ["A1"]
    # with none pending, a later wait names every spawned child again
    assert resolve(both, "wait")[1]["targets"] == ["A1", "A2"]


def test_complete_task_fills_the_whole_output_schema_with_the_text() -> None:
    report = {
        "type": "object",
        "properties": {
            "report": {
                "type": "object",
                "properties": {
                    "SummaryOfFindings": S,
                    "RelevantLocations": {"type": "array", "items": S},
                },
            }
        },
        "required": ["report"],
    }
    view = views.gemini(
        [{"role": "user", "parts": [{"text": "go"}]}],
        tools=[
            {"functionDeclarations": [{"name": "complete_task", "parametersJsonSchema": report}]}
        ],
    )
    assert resolve(view, "complete", text="found it")[1] == {
        "report": {"SummaryOfFindings": "found it", "RelevantLocations": ["found it"]}
    }


def test_roles_classify_context_calls() -> None:
    assert role_of("Agent") == "spawn" and role_of("subagent_fork") == "spawn"
    assert role_of("exec_command") == "shell" and role_of("complete_task") == "complete"
    assert role_of("Edit") is None


def test_a_forced_tool_call_is_made_even_when_the_tool_is_not_offered() -> None:
    view = responses_with(fn("bash", {"command": S}, ["command"]))
    args = {"description": "d", "prompt": "p", "subagent_type": "general"}
    assert resolve_call(CallSpec(tool="task", arguments=args), view) is None
    forced = resolve_call(CallSpec(tool="task", arguments=args, force=True), view)
    assert forced is not None
    assert (forced.name, forced.namespace, forced.arguments) == ("task", None, args)
    # An offered tool is still filled from its schema, forced or not.
    offered = resolve_call(CallSpec(tool="bash", force=True), view)
    assert offered is not None and offered == resolve_call(CallSpec(tool="bash"), view)


def test_a_resuming_spawn_names_the_child_the_earlier_result_reported() -> None:
    task = {
        "name": "task",
        "description": "d",
        "input_schema": {
            "type": "object",
            "properties": {"description": S, "prompt": S, "subagent_type": S, "task_id": S},
            "required": ["description", "prompt", "subagent_type"],
        },
    }
    first = views.anthropic([{"role": "user", "content": "go"}], tools=[task])
    _, fresh = resolve(first, "spawn", prompt="p", resume=True)
    assert "task_id" not in fresh  # nothing to resume yet
    later = views.anthropic(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "task", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": '<task id="ses_child1" state="completed">\n<task_result>\n'
                        "done\n</task_result>\n</task>",
                    }
                ],
            },
        ],
        tools=[task],
    )
    _, resumed = resolve(later, "spawn", prompt="p", resume=True)
    assert resumed["task_id"] == "ses_child1"
    _, plain = resolve(later, "spawn", prompt="p")
    assert "task_id" not in plain


def _openclaw_chat(tools: list[str], system: str, messages: list[Any] | None = None) -> RequestView:
    return views.chat(
        [{"role": "system", "content": system}, *(messages or [{"role": "user", "content": "go"}])],
        tools=tools,
    )


DEFERRED = "### Deferred Tool Schemas\n- sessions_spawn (core): Spawn child session"


def test_a_deferred_spawn_is_called_through_the_bridge_the_system_text_names() -> None:
    """OpenClaw's default Tool Search surface: only `tool_call` is offered, the spawn
    tool is listed in the system prompt; a plain and a forking spawn go through it."""
    view = _openclaw_chat(["exec", "tool_call", "tool_search"], DEFERRED)
    call = resolve_call(CallSpec(role="spawn", params={"prompt": "p"}), view)
    assert call is not None
    assert (call.name, call.arguments) == (
        "tool_call",
        {"id": "sessions_spawn", "args": {"task": "p"}},
    )
    fork = resolve_call(CallSpec(role="spawn", params={"prompt": "p", "fork": True}), view)
    assert fork is not None
    assert fork.arguments["args"] == {"task": "p", "context": "fork"}
    # not named by the system text: the bridge does not reach it
    assert (
        resolve_call(
            CallSpec(role="spawn", params={"prompt": "p"}), _openclaw_chat(["tool_call"], "x")
        )
        is None
    )


def test_a_bridged_call_in_the_context_counts_as_a_call_of_the_tool_it_names() -> None:
    bridged = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "tool_call",
                    "arguments": json.dumps({"id": "sessions_spawn", "args": {"task": "p"}}),
                },
            }
        ],
    }
    view = _openclaw_chat(["tool_call"], DEFERRED, [{"role": "user", "content": "go"}, bridged])
    assert [c.id for c in calls_of(view, frozenset({"spawn"}))] == ["c1"]
    assert [c.id for c in calls_of(view, frozenset({"sessions_spawn"}))] == ["c1"]


def test_a_text_that_quotes_a_child_task_back_is_not_user_authored() -> None:
    announce = (
        "[Tue 2026-12-01 19:15 UTC] A background task completed. task: ROLLER-SUBTASK depth=1 id=a"
    )
    internal = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\ntask: ROLLER-SUBTASK depth=1 id=a"
    child = (
        "[Tue 2026-12-01 19:15 UTC] [Subagent Context] You are running as a subagent (depth 1/5)."
    )
    view = _openclaw_chat(
        [], "s", [{"role": "user", "content": t} for t in ("go", announce, internal, child)]
    )
    assert authored_user_texts(view) == ["go", child]
    assert quotes_a_task(announce) and quotes_a_task(internal) and not quotes_a_task(child)

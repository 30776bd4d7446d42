"""Every built-in scenario, driven by each harness's simulated agent loop, terminates and
uses that harness's own tools (shapes from /work/shared/harnesses/*.md)."""

from __future__ import annotations

import json

import pytest

from roller.mock import builtin_scenarios
from tests.mock.conftest import ServeMock
from tests.mock.sim_harnesses import HARNESSES, Simulation

SPAWNING = [n for n in builtin_scenarios() if n.startswith("spawn-")]
# Harnesses whose children can spawn again (Claude Code to depth 2, Qwen Code to depth 5).
NESTING = {"claude-code", "qwen-code"}


def simulate(serve_mock: ServeMock, harness: str, scenario: str) -> Simulation:
    mock, url = serve_mock(scenario)
    sim = Simulation(HARNESSES[harness], mock, url)
    sim.run()
    return sim


@pytest.mark.parametrize("scenario", sorted(builtin_scenarios()))
@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_every_scenario_terminates_on_every_harness(
    serve_mock: ServeMock, harness: str, scenario: str
) -> None:
    sim = simulate(serve_mock, harness, scenario)
    shape = HARNESSES[harness]
    # The root's last reply is text, and no request was answered by the agent fallback
    # except on a harness without the tools the scenario needs.
    assert sim.steps[-1][0] == "root" and sim.steps[-1][2] == []
    spawn_calls = [c for _, c in sim.calls if c.name in (shape.spawn_tool, "subagent_fork")]
    if scenario.startswith("spawn-") and shape.spawn_tool is not None:
        assert spawn_calls, f"{harness} never spawned under {scenario}"
        # every child replied through a child rule, never through the root's rules
        for label, rule, _, _ in sim.steps:
            if label != "root":
                assert rule is not None and rule.startswith(("child", "grandchild")), (label, rule)
    else:
        assert not spawn_calls
    if scenario != "spawn-no-wait":
        assert sim.aborted == []
    # Only the forced scenario makes a call to a tool the agent was not offered: the
    # child's first-turn `task` (no harness simulated here offers `task` to a child; a
    # Codex v2 warm-forked child starts past turn 0, so it just replies).
    rejected = [(label, c.name) for label, c in sim.rejected]
    if scenario == "spawn-forced-grandchild" and harness == "opencode":
        assert rejected == [("root/1", "task")]
    elif scenario == "spawn-forced-grandchild":
        assert set(rejected) <= {("root/1", "task")}
    else:
        assert rejected == []


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_spawn_one_uses_the_harness_spawn_tool(serve_mock: ServeMock, harness: str) -> None:
    sim = simulate(serve_mock, harness, "spawn-one")
    shape = HARNESSES[harness]
    names = [(label, c.name) for label, c in sim.calls]
    if shape.spawn_tool is None:
        assert names == [] and sim.spawned == []
        return
    assert names[0] == ("root", shape.spawn_tool)
    assert sim.spawned == [("root", "root/1")]
    child_steps = [s for s in sim.steps if s[0] == "root/1"]
    if harness == "gemini-cli":
        assert [s[2] for s in child_steps] == [["complete_task"]]
    else:
        assert [(s[1], s[3]) for s in child_steps] == [("child: reply", "done")]


def test_claude_code_background_spawn_ends_after_the_notification(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "claude-code", "spawn-background")
    root = [(rule, calls) for label, rule, calls, _ in sim.steps if label == "root"]
    # spawn; "Async agent launched" -> text; the <task-notification> turn -> text; stop.
    assert root == [("root: spawn", ["Agent"]), ("root: finish", []), ("root: finish", [])]
    assert sim.calls[0][1].arguments["run_in_background"] is True


def test_claude_code_foreground_spawn_gets_the_hand_back(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "claude-code", "spawn-foreground")
    root = [(rule, calls) for label, rule, calls, _ in sim.steps if label == "root"]
    assert root == [("root: spawn", ["Agent"]), ("root: finish", [])]
    assert sim.calls[0][1].arguments == {
        "description": "roller subtask a",
        "prompt": "ROLLER-SUBTASK depth=1 id=a: reply with the word done.",
        "run_in_background": False,
    }


@pytest.mark.parametrize("harness", ["codex-v1", "codex-v2"])
def test_codex_parent_waits_so_its_child_runs(serve_mock: ServeMock, harness: str) -> None:
    sim = simulate(serve_mock, harness, "spawn-then-wait")
    assert [(label, c.namespace, c.name) for label, c in sim.calls] == [
        ("root", "multi_agent_v1" if harness == "codex-v1" else "collaboration", "spawn_agent"),
        ("root", "multi_agent_v1" if harness == "codex-v1" else "collaboration", "wait_agent"),
    ]
    wait = sim.calls[1][1].arguments
    assert wait["timeout_ms"] == 60000
    assert ("targets" in wait) == (harness == "codex-v1")
    assert [s[0] for s in sim.steps] == ["root", "root", "root/1", "root"]
    assert sim.aborted == []


def test_codex_child_is_aborted_without_a_wait(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "codex-v1", "spawn-no-wait")
    assert len(sim.aborted) == 1
    assert [s[0] for s in sim.steps] == ["root", "root"]


def test_codex_v2_fork_child_is_told_apart_by_its_task(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "codex-v2", "spawn-fork")
    spawn = sim.calls[0][1].arguments
    assert spawn["fork_turns"] == "all" and spawn["task_name"] == "forked_child"
    # The forked child's context holds the parent's whole history, spawn call included,
    # yet it answers through the child rule.
    child = [s for s in sim.steps if s[0] == "root/1"]
    assert [(s[1], s[3]) for s in child] == [("child: reply", "done")]


def test_deepseek_fork_prefers_subagent_fork(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "deepseek", "spawn-fork")
    assert sim.calls[0][1].name == "subagent_fork"


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_two_parallel_spawns_in_one_reply(serve_mock: ServeMock, harness: str) -> None:
    sim = simulate(serve_mock, harness, "spawn-two-parallel")
    first = sim.steps[0]
    spawn_tool = HARNESSES[harness].spawn_tool
    if spawn_tool is None:
        assert first[2] == []
        return
    assert first[2] == [spawn_tool, spawn_tool]
    prompts = [c.arguments for label, c in sim.calls if c.name == spawn_tool]
    assert len({json.dumps(p, sort_keys=True) for p in prompts}) == 2
    assert sim.spawned == [("root", "root/1"), ("root", "root/2")]


@pytest.mark.parametrize("harness", ["claude-code", "opencode", "codex-v2", "gemini-cli"])
def test_identical_prompts_are_identical(serve_mock: ServeMock, harness: str) -> None:
    sim = simulate(serve_mock, harness, "spawn-identical-prompts")
    spawn_tool = HARNESSES[harness].spawn_tool
    spawns = [c.arguments for _, c in sim.calls if c.name == spawn_tool]
    assert len(spawns) == 2
    without_names = [{k: v for k, v in a.items() if k != "task_name"} for a in spawns]
    assert without_names[0] == without_names[1]


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_nested_spawn_goes_as_deep_as_the_harness_allows(
    serve_mock: ServeMock, harness: str
) -> None:
    sim = simulate(serve_mock, harness, "spawn-nested")
    if HARNESSES[harness].spawn_tool is None:
        assert sim.spawned == []
    elif harness in NESTING:
        assert sim.spawned == [("root", "root/1"), ("root/1", "root/1/1")]
        grandchild = [s for s in sim.steps if s[0] == "root/1/1"]
        assert [s[1] for s in grandchild] == ["grandchild: reply"]
    else:
        assert sim.spawned == [("root", "root/1")]


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_file_sharing_parent_reads_what_the_child_wrote(
    serve_mock: ServeMock, harness: str
) -> None:
    sim = simulate(serve_mock, harness, "spawn-file-sharing")
    if HARNESSES[harness].spawn_tool is None:
        assert sim.files == {}
        return
    assert sim.files == {"shared.txt": "roller-shared\n"}
    shell = [(label, c.arguments) for label, c in sim.calls if c.name not in _spawn_like(harness)]
    commands = [(label, a.get("command", a.get("cmd"))) for label, a in shell]
    assert ("root/1", "echo roller-shared > shared.txt") in commands
    assert commands[-1] == ("root", "cat shared.txt")
    # The parent's cat ran after the child's write: its output was the file's content.
    outputs = [
        out
        for _, c, out in sim.results
        if c.arguments.get("command", c.arguments.get("cmd")) == "cat shared.txt"
    ]
    assert outputs == ["roller-shared\n"]


def _spawn_like(harness: str) -> set[str]:
    return {HARNESSES[harness].spawn_tool or "", "wait_agent", "complete_task", "subagent_fork"}


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_tool_error_runs_a_failing_command_with_the_harness_shell(
    serve_mock: ServeMock, harness: str
) -> None:
    sim = simulate(serve_mock, harness, "tool-error")
    shells = {
        "claude-code": "Bash",
        "opencode": "bash",
        "codex-v1": "exec_command",
        "codex-v2": "exec_command",
        "gemini-cli": "run_shell_command",
        "hermes": "terminal",
        "pi": "bash",
        "qwen-code": "run_shell_command",
        "deepseek": "bash",
        "openclaw": "exec",
    }
    assert [(label, c.name) for label, c in sim.calls] == [("root", shells[harness])]
    arguments = sim.calls[0][1].arguments
    assert "ls /nonexistent-roller-path" in (arguments.get("command"), arguments.get("cmd"))
    assert [s[1] for s in sim.steps] == ["run a failing command", "finish"]


def test_opencode_title_request_gets_a_short_title(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "opencode", "spawn-one")
    assert sim.side_requests == [("title", "Roller mock session")]
    assert "default:title" in [s.rule for s in sim.mock.served]


def test_gemini_router_gets_schema_filled_json(serve_mock: ServeMock) -> None:
    sim = simulate(serve_mock, "gemini-cli", "spawn-one")
    routers = [json.loads(text) for kind, text in sim.side_requests if kind == "router"]
    assert len(routers) == 2  # the parent's prompt and the child's
    for decision in routers:
        assert isinstance(decision["complexity_reasoning"], str)
        assert decision["complexity_score"] == 1

"""The common acceptance scenarios (issue 4): one table, shared by every harness.

Each row implies its expectations; a harness that runs a scenario differently (a
foreground default, no nesting, no background parameter) says so in its acceptance
profile (`roller.harnesses.<name>.acceptance`), never here. Mock scenario files that are
not built into `roller mock-model` live beside this module.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from roller.errors import UsageError
from roller.harnesses.acceptance import Expect, Scenario, ToolResultExpect, delegation_relations

SCENARIO_DIR = Path(__file__).parent


def delegating(children: int, max_depth: int = 1, *, background: bool = False) -> Expect:
    """A run with `children` delegations of one kind, `max_depth` levels deep."""
    return Expect(
        children=children,
        max_depth=max_depth,
        relations=delegation_relations(children, background=background),
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="single",
        mock="spawn-one",
        prompt="Use one subagent to reply with the word done, then tell me what it said.",
        expect=delegating(1),
        summary="one subagent, the harness's default mode",
    ),
    Scenario(
        name="parallel",
        mock="spawn-two-parallel",
        prompt="Start two subagents at the same time; each replies with the word done.",
        expect=delegating(2),
        summary="two subagents started in one response",
    ),
    Scenario(
        name="identical-prompts",
        mock="spawn-identical-prompts",
        prompt="Start two subagents at once with exactly the same task: reply with done.",
        expect=replace(delegating(2), identical_children=True),
        summary="two subagents with the same prompt, told apart by evidence",
    ),
    Scenario(
        name="file-sharing",
        mock="spawn-file-sharing",
        prompt="Have a subagent write roller-shared into shared.txt, then read the file yourself.",
        expect=replace(
            delegating(1),
            root_tool_result=ToolResultExpect(contains="roller-shared", error=False),
        ),
        summary="the child writes a file the parent then reads",
    ),
    Scenario(
        name="tool-error",
        mock="tool-error",
        prompt="Run `ls /nonexistent-roller-path` and tell me what happened.",
        expect=Expect(
            root_tool_result=ToolResultExpect(contains="nonexistent-roller-path", error=True),
        ),
        summary="a shell command fails; the error reaches the model",
    ),
    Scenario(
        name="tool-config",
        mock="tool-config.toml",
        prompt="Use the roller-restricted agent to reply with the word done.",
        expect=replace(delegating(1), child_tools_differ=True),
        summary="the child is offered its own tool set; its calls record it as sent",
    ),
    Scenario(
        name="plain",
        mock="plain",
        prompt="Reply with the word done.",
        expect=Expect(),
        summary="no subagent at all",
    ),
    Scenario(
        name="nested",
        mock="spawn-nested",
        prompt="Use a subagent that itself uses a subagent; each replies with done.",
        expect=delegating(2, max_depth=2),
        summary="root -> child -> grandchild",
    ),
    Scenario(
        name="background",
        mock="spawn-background",
        prompt="Start one subagent in the background to reply with done; report its answer.",
        expect=delegating(1, background=True),
        summary="an explicitly background subagent, completion by notification",
    ),
    Scenario(
        name="fork",
        mock="spawn-fork",
        prompt="Fork yourself into one subagent that keeps this conversation; it replies done.",
        expect=replace(delegating(1), child_forked_from_root=True),
        summary="a child started from a copy of its parent's history (a warm fork)",
    ),
    Scenario(
        name="foreground",
        mock="spawn-foreground",
        prompt="Run one subagent in the foreground to reply with done; report its answer.",
        expect=replace(
            delegating(1),
            forbidden_relations=frozenset({"launch_acknowledged", "launch_ack_in_context"}),
        ),
        summary="an explicitly foreground subagent, result as the tool result",
    ),
)

SCENARIO_NAMES: tuple[str, ...] = tuple(s.name for s in SCENARIOS)


def scenario(name: str) -> Scenario:
    for s in SCENARIOS:
        if s.name == name:
            return s
    raise UsageError(f"unknown scenario {name!r} (known: {', '.join(SCENARIO_NAMES)})")


def mock_source(name: str) -> str:
    """What `load_scenario` takes: a built-in name, or the path of a file shipped here."""
    if name.endswith(".toml"):
        return str(SCENARIO_DIR / name)
    return name

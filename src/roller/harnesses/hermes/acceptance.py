"""Hermes Agent 0.19.0 in the acceptance suite.

- Delegation is foreground: under `hermes -z` (roller's launch) `delegate_task` runs its
  children inside the tool call, whatever `background` says, and the results come back
  as the tool result. `background` is therefore not applicable; `foreground` is the mode.
- `identical-prompts`: Hermes drops a second tool call with the same name and arguments
  from a reply before running it (run_agent.py `_deduplicate_tool_calls`), so the
  scenario's two identical calls would be one child. Its form of the scenario is one
  call with two identical tasks (`hermes-identical.toml`): two children, told apart by
  their own session ids.
- `nested`: a child delegates only with role `orchestrator` and
  `delegation.max_spawn_depth` 2 (`max-spawn-depth` option; `hermes-nested.toml`).
- `tool-config`: `delegate_task` has no agent types; a child always gets its own tool
  set (no `delegate_task`, `clarify`, `memory`, `execute_code`) and, with the
  `child-model` option, its own model.
- `fork`: `delegate_task` starts a child from its goal alone: no history fork.
- `batched` (Hermes only): ONE `delegate_task` call with `tasks: [a, b]` gives two
  children, each with its own calls, both spawned by that one tool call.
"""

from __future__ import annotations

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    Expect,
    Scenario,
    ScenarioOverride,
    delegation_relations,
)
from roller.harnesses.hermes.profile import NAME

BATCHED = Scenario(
    name="batched",
    mock="hermes-batched.toml",
    prompt="Delegate two tasks in one delegation call; each subagent replies with done.",
    expect=Expect(children=2, max_depth=1, relations=delegation_relations(2)),
    summary="one delegation call that starts two children",
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
    not_applicable={
        "background": "under hermes -z (a one-shot run cannot receive a detached result) "
        "delegate_task always runs its children inside the tool call",
        "fork": "delegate_task starts a child from its goal alone: no history fork",
    },
    overrides={
        "identical-prompts": ScenarioOverride(mock="hermes-identical.toml"),
        "nested": ScenarioOverride(mock="hermes-nested.toml", options={"max-spawn-depth": "2"}),
        "tool-config": ScenarioOverride(
            mock="spawn-one",
            options={"child-model": "mock-small"},
            expect={"child_model_differs": True},
        ),
    },
    extra_scenarios=(BATCHED,),
    timeout_s=240.0,
)

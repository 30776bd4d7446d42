"""Codex 0.171.0 (`codex exec`) in the acceptance suite, both ways people run it.

Mode `function-tools`:
- Against the mock the model is `mock-model`: a name outside Codex's bundled catalog
  gets Codex's fallback metadata and plain Responses function tools (the
  `multi_agent_v1` / `collaboration` namespaces).
- `nested`: v1 children get a spawn tool only with `[agents] max_depth = 2`.
- `tool-config`: no agent-type argument; the child gets its own model (and with it
  Codex's code-mode tool configuration) through `spawn_agent`'s `model` override.
- `fork`: v2 (`multi-agent=v2`, `fork_turns: "all"`): a warm-forked child whose first
  request carries the root's history, recorded as sent and attributed to the child.

Mode `code-mode`: no model asked for, so Codex runs its catalog default (`gpt-6.2-sol`)
in code mode, as its users do: no `tools` in the request, the tools in an
`additional_tools` input item, shell commands from a JavaScript `exec` script, and the
v2 `collaboration` tools (the catalog's multi-agent version) called directly.
- `nested`: v2 children can spawn in code mode (no max depth to raise).
- `tool-config`: a v2 child forked from its parent keeps the parent's `additional_tools`
  item, so the child is spawned without history (`fork_turns: "none"`) and with its own
  catalog model: its calls carry its own tool item.
- `fork`: warm forks are v2's default.

Both: every spawn is asynchronous (`spawn_agent` returns a launch acknowledgement, the
result comes through `wait_agent`, a `<subagent_notification>` or a v2 `FINAL_ANSWER`
message), so every delegation also shows `launch_acknowledged` and
`launch_ack_in_context`; there is no foreground spawn. Spawns made inside `exec` scripts
(v1 catalog models, `--option agent-tools=exec`) are covered by tests/e2e/test_codex.py.
"""

from __future__ import annotations

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    ScenarioOverride,
    background_default,
    delegation_relations,
)
from roller.harnesses.codex.profile import NAME

_NO_FOREGROUND = {
    "foreground": "spawn_agent always runs the child asynchronously and returns a launch "
    "acknowledgement; the result comes through wait_agent",
}
_BACKGROUND = {
    "single": background_default(1),
    "parallel": background_default(2),
    "identical-prompts": background_default(2),
    "file-sharing": background_default(1),
    "fork": background_default(1),
}

CODE_MODE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY",),
    mode="code-mode",
    not_applicable=_NO_FOREGROUND,
    overrides={
        **_BACKGROUND,
        "nested": ScenarioOverride(expect={"relations": delegation_relations(2, background=True)}),
        "tool-config": ScenarioOverride(
            mock="codex-code-mode-tool-config.toml",
            expect={
                "relations": delegation_relations(1, background=True),
                "child_model_differs": True,
            },
        ),
    },
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY",),
    mock_model="mock-model",
    mode="function-tools",
    not_applicable=_NO_FOREGROUND,
    overrides={
        **_BACKGROUND,
        "nested": ScenarioOverride(
            options={"max-depth": "2"},
            expect={"relations": delegation_relations(2, background=True)},
        ),
        "tool-config": ScenarioOverride(
            mock="codex-tool-config.toml",
            expect={
                "relations": delegation_relations(1, background=True),
                "child_model_differs": True,
            },
        ),
        "fork": ScenarioOverride(
            options={"multi-agent": "v2"},
            expect={"relations": delegation_relations(1, background=True)},
        ),
    },
    other_modes=(CODE_MODE,),
)

"""Codex 0.171.0 (`codex exec`) in the acceptance suite.

- Against the mock the model is `mock-model`: a name outside Codex's bundled catalog
  gets Codex's fallback metadata and plain Responses function tools (the
  `multi_agent_v1` / `collaboration` namespaces). A catalog model switches Codex to its
  code mode (tools in an `additional_tools` input item, called from a JavaScript `exec`
  tool), which the mock does not speak; against a real provider the caller's model wins.
- Every spawn is asynchronous: `spawn_agent` returns a launch acknowledgement and the
  result comes through `wait_agent` (and a `<subagent_notification>`), so every
  delegation also shows `launch_acknowledged` and `launch_ack_in_context`; there is no
  foreground spawn.
- `nested`: v1 children get a spawn tool only with `[agents] max_depth = 2`.
- `tool-config`: no agent-type argument; the child gets its own model (and with it
  Codex's code-mode tool configuration) through `spawn_agent`'s `model` override.
- `fork`: v2 (`multi-agent=v2`, `fork_turns: "all"`): a warm-forked child whose first
  request carries the root's history, recorded as sent and attributed to the child.
"""

from __future__ import annotations

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    ScenarioOverride,
    background_default,
    delegation_relations,
)
from roller.harnesses.codex.profile import NAME

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY",),
    mock_model="mock-model",
    not_applicable={
        "foreground": "spawn_agent always runs the child asynchronously and returns a launch "
        "acknowledgement; the result comes through wait_agent",
    },
    overrides={
        "single": background_default(1),
        "parallel": background_default(2),
        "identical-prompts": background_default(2),
        "file-sharing": background_default(1),
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
)

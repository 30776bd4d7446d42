"""Gemini CLI 0.61.0 in the acceptance suite.

- Subagents run in the foreground only: `invoke_agent` has no background parameter (its
  arguments are `agent_name`, `prompt`, `wait_for_previous`); the child runs to the end
  inside the tool call and its result is the tool result. `background` is therefore
  not applicable; `foreground` is the harness's only mode.
- `nested`: a subagent gets no agent tools (the CLI skips every tool of kind `agent`
  when it builds a subagent's registry), so a child cannot spawn: depth 2 cannot be
  expressed.
- `tool-config`: a custom local agent `roller-restricted` with only `read_file` (plus
  the `complete_task` every subagent gets) and its own model, defined through the
  adapter's `agents` option; the mock names it in `agent_name`.
- Every run uses the adapter defaults: `--approval-mode yolo` (shell and file tools),
  the model router on (its JSON-mode side calls are calls like any other).
"""

from __future__ import annotations

import json

from roller.harnesses.acceptance import AcceptanceProfile, ScenarioOverride
from roller.harnesses.gemini_cli.profile import NAME

RESTRICTED_AGENT = json.dumps(
    {
        "roller-restricted": {
            "description": "A restricted helper for roller's tool-config scenario.",
            "prompt": "You are a restricted helper. Do exactly what you are asked.",
            "tools": ["read_file"],
            "model": "gemini-2.5-flash",
        }
    }
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("GEMINI_API_KEY",),
    not_applicable={
        "nested": "Gemini CLI 0.61.0 gives a subagent no agent tools (invoke_agent is "
        "skipped for agents), so a child cannot spawn a grandchild",
        "background": "invoke_agent has no background parameter: a Gemini CLI subagent "
        "always runs to completion inside the spawning tool call",
        "fork": "invoke_agent starts the subagent from its prompt alone: no history fork",
    },
    overrides={
        "tool-config": ScenarioOverride(
            mock="gemini-cli-tool-config.toml",
            options={"agents": RESTRICTED_AGENT},
            expect={
                "child_tools": frozenset({"read_file", "complete_task"}),
                "child_tools_differ": True,
                "child_model_differs": True,
            },
        ),
    },
)

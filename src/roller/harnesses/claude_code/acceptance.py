"""Claude Code 2.1.332 in the acceptance suite.

- Subagents run in the background by default: every scenario that does not ask for a
  mode also shows the launch acknowledgement and its entry into later parent inputs.
- `tool-config`: a custom agent `roller-restricted` with only `Read` and the `haiku`
  model, defined through `--agents`; the child's calls must offer exactly `Read`.
- `nested`: the mock spawns in the foreground at both levels (root -> child ->
  grandchild), which 2.1.332 allows (a depth-3 agent gets no Agent tool).
- Shell scenarios run with `--allowedTools Bash,Read,Write,Edit` (the adapter default).
"""

from __future__ import annotations

import json

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    ScenarioOverride,
    background_default,
    delegation_relations,
)
from roller.harnesses.claude_code.profile import NAME

RESTRICTED_AGENT = json.dumps(
    {
        "roller-restricted": {
            "description": "A restricted helper for roller's tool-config scenario.",
            "prompt": "You are a restricted helper. Do exactly what you are asked.",
            "tools": ["Read"],
            "model": "haiku",
        }
    }
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("ANTHROPIC_API_KEY",),
    not_applicable={
        "fork": "the Agent tool of 2.1.332 has no history fork: a subagent starts from its prompt",
    },
    overrides={
        "single": background_default(1),
        "parallel": background_default(2),
        "identical-prompts": background_default(2),
        "file-sharing": background_default(1),
        "tool-config": ScenarioOverride(
            options={"agents": RESTRICTED_AGENT},
            expect={
                "relations": delegation_relations(1, background=True),
                "child_tools": frozenset({"Read"}),
                "child_model_differs": True,
            },
        ),
    },
)

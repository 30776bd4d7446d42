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

from roller.acceptance.scenarios import delegation_relations
from roller.acceptance.spec import HarnessProfile, ScenarioOverride


def _background(children: int) -> ScenarioOverride:
    """The harness default is background: the launch acknowledgement is expected too."""
    return ScenarioOverride(expect={"relations": delegation_relations(children, background=True)})


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

PROFILE = HarnessProfile(
    harness="claude-code",
    credential_env=("ANTHROPIC_API_KEY",),
    overrides={
        "single": _background(1),
        "parallel": _background(2),
        "identical-prompts": _background(2),
        "file-sharing": _background(1),
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

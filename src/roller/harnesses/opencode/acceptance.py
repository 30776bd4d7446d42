"""OpenCode 1.18.33 in the acceptance suite.

- Delegation is foreground only: the pinned bundled `task` schema has no background
  parameter (it exists only behind OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS, which
  roller does not set), so `background` is not applicable; `foreground` is the default
  mode and shows no launch acknowledgement.
- `nested`: OpenCode's depth limit is 1 and a subagent is offered no `task` tool. The
  mock forces the child to call `task` anyway (`spawn-forced-grandchild`); OpenCode
  refuses it natively (tool `invalid`). The capture keeps the child's trajectory with
  the refused call, shows one child at depth 1, no invented grandchild, and says so in
  `capabilities.notes`.
- `tool-config`: a custom subagent `roller-restricted` defined through the adapter's
  `agents` option (OpenCode agent config): only `read` allowed, its own model served
  through the proxy; the child's calls must offer exactly `read`.
- Every run starts OpenCode in a fresh HOME (about 38 database migrations first), and
  several run at once: the timeout is generous.
"""

from __future__ import annotations

import json

from roller.harnesses.acceptance import AcceptanceProfile, ScenarioOverride, delegation_relations
from roller.harnesses.opencode.profile import NAME

RESTRICTED_AGENT = json.dumps(
    {
        "roller-restricted": {
            "description": "A restricted helper for roller's tool-config scenario.",
            "mode": "subagent",
            "prompt": "You are a restricted helper. Do exactly what you are asked.",
            "model": "mock-small",
            "permission": {"*": "deny", "read": "allow"},
        }
    }
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY",),
    not_applicable={
        "background": "the pinned task tool (OpenCode 1.18.33, bundled profile) has no "
        "background parameter: delegation is foreground only",
        "fork": "the task tool starts a child session from its prompt alone: no history fork",
    },
    overrides={
        "nested": ScenarioOverride(
            mock="spawn-forced-grandchild",
            expect={
                "children": 1,
                "max_depth": 1,
                "relations": delegation_relations(1),
                "capability_notes": ("was refused by OpenCode",),
            },
        ),
        "tool-config": ScenarioOverride(
            options={"agents": RESTRICTED_AGENT},
            expect={
                "child_tools": frozenset({"read"}),
                "child_model_differs": True,
            },
        ),
    },
    timeout_s=300.0,
)

"""OpenClaw 2026.9.6 in the acceptance suite.

- Every spawn is a background run: each delegation also shows the launch acknowledgement
  and its entry into the parent's next input, and the result arrives by an announce
  (`notification_id_prefix`: the call it reached names an `announce:v1:` notification —
  its announce run, or the message steered into the parent's turn when the child ended
  while that turn still ran).
- The default tool surface is OpenClaw's own (Tool Search: `sessions_spawn` reached
  through `tool_call`); `announce` runs the single delegation again on the direct
  surface (`tool_search=off`), so both surfaces are exercised.
- `tool-config`: a configured agent `roller-restricted` allowed only `read`
  (`agents` option), spawned by `agentId` on the direct surface (with Tool Search the
  child is also offered `tool_call`, `tool_describe`, `tool_search`); its calls offer
  exactly `read`.
- `foreground`: not applicable (no foreground spawn exists). `fork`: `sessions_spawn`
  `context: "fork"` copies the parent's transcript into the child.
- A Gateway start is 15–45 s on this machine: the timeout is 300 s.
"""

from __future__ import annotations

import json
from dataclasses import replace

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    Expect,
    Scenario,
    ScenarioOverride,
    delegation_relations,
)
from roller.harnesses.openclaw.profile import NAME

ANNOUNCE_RUN = "announce:v1:"
RESTRICTED_AGENT = json.dumps({"roller-restricted": {"tools": {"allow": ["read"]}}})


def _background(children: int, **expect: object) -> ScenarioOverride:
    return ScenarioOverride(
        expect={
            "relations": delegation_relations(children, background=True),
            "notification_id_prefix": ANNOUNCE_RUN,
            **expect,
        }
    )


ANNOUNCE = Scenario(
    name="announce",
    mock="spawn-one",
    prompt="Use one subagent to reply with the word done, then tell me what it said.",
    expect=replace(
        Expect(children=1, max_depth=1, relations=delegation_relations(1, background=True)),
        notification_id_prefix=ANNOUNCE_RUN,
    ),
    options={"tool_search": "off"},
    summary="the child's result reaches the parent as an announce run (direct tool surface)",
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY",),
    not_applicable={
        "foreground": "every sessions_spawn runs in the background and announces its result",
    },
    overrides={
        "single": _background(1),
        "parallel": _background(2),
        "identical-prompts": _background(2),
        "file-sharing": _background(1),
        "background": _background(1),
        "fork": _background(1),
        "nested": _background(2),
        "tool-config": ScenarioOverride(
            mock="openclaw-tool-config.toml",
            # the direct surface: with Tool Search the child is also offered its bridge
            options={"agents": RESTRICTED_AGENT, "tool_search": "off"},
            expect={
                "relations": delegation_relations(1, background=True),
                "notification_id_prefix": ANNOUNCE_RUN,
                "child_tools": frozenset({"read"}),
            },
        ),
    },
    timeout_s=300.0,
    extra_scenarios=(ANNOUNCE,),
)

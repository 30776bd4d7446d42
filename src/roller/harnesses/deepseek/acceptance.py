"""DeepSeek Harness 0.2.1rc2 in the acceptance suite.

roller's default profile is `sdk-minimal`: root only, no subagent tool, so every
scenario that needs a child is not applicable (`capabilities.subtasks =
not_available_in_bundled_profile`), never counted as passed; `plain` and `tool-error`
run. `tool-error`: the harness's bash reports a failing command in the result text
(`ls: cannot access '/nonexistent-roller-path' … exit code 2`, worded differently per
profile) with `is_error: false`: the result is checked by that text.
`--option profile=sdk` runs the suite on the `sdk` profile (the `SDK_PROFILE` variant),
where:
- every child runs in the background: `subagent` returns a launch acknowledgement
  ("started subagent <id>") and the result arrives as a notice turn, so every
  delegation also shows `launch_acknowledged` and `launch_ack_in_context`; there is no
  foreground mode (`foreground` not applicable);
- `nested`: a child may delegate only with the subagent plugin's `maxDepth` raised
  (`max-depth=2`);
- `fork`: `subagent_fork` copies the parent's *completed* turns, so the scenario runs two
  prompts (turn 1 completes, turn 2 forks: `roller-fork.toml`); the child's first
  request resends turn 1 and its participant records that copied prefix;
- `tool-config`: `subagent` has no agent types or model argument: not applicable.
"""

from __future__ import annotations

from roller.harnesses.acceptance import (
    AcceptanceProfile,
    ScenarioOverride,
    ToolResultExpect,
    background_default,
    delegation_relations,
)
from roller.harnesses.deepseek.profile import NAME

_NO_SUBAGENTS = (
    "DeepSeek Harness's bundled sdk-minimal profile has no subagent tool: subtasks are "
    "not_available_in_bundled_profile (run the sdk profile with --option profile=sdk)"
)

# The failing command's result as the harness reports it (text, not the error flag).
TOOL_ERROR = ScenarioOverride(
    expect={
        "root_tool_result": ToolResultExpect(
            contains="cannot access '/nonexistent-roller-path'", error=False
        )
    }
)

SDK_PROFILE = AcceptanceProfile(
    harness=NAME,
    credential_env=("DEEPSEEK_API_KEY",),
    options={"profile": "sdk"},
    not_applicable={
        "foreground": "every DeepSeek Harness subagent runs in the background: the spawn "
        "result is a launch acknowledgement, the result a later notice turn",
        "tool-config": "subagent has no agent-type or model argument: a child gets its "
        "parent's tools and model",
    },
    overrides={
        "tool-error": TOOL_ERROR,
        "single": background_default(1),
        "parallel": background_default(2),
        "identical-prompts": background_default(2),
        "file-sharing": background_default(1),
        "background": background_default(1),
        "nested": ScenarioOverride(
            options={"max-depth": "2"},
            expect={"relations": delegation_relations(2, background=True)},
        ),
        "fork": ScenarioOverride(
            mock="deepseek-fork.toml",
            prompt="Say hello.",
            follow_up=("Now fork yourself into one subagent that keeps this conversation.",),
            expect={"relations": delegation_relations(1, background=True)},
        ),
    },
    timeout_s=240.0,
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("DEEPSEEK_API_KEY",),
    no_delegation=_NO_SUBAGENTS,
    overrides={"tool-error": TOOL_ERROR},
    timeout_s=240.0,
    variants={"profile=sdk": SDK_PROFILE},
)

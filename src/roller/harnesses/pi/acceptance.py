"""Pi 0.73.1 in the acceptance suite.

roller's Pi profile runs without extensions, and Pi has no built-in delegation tool
("No sub-agents", its README): every scenario that needs a subagent is not applicable
(`capabilities.subtasks = not_available_in_bundled_profile`), never counted as passed.
`plain` and `tool-error` run with the adapter's default API (`openai-responses`);
`Plan.options` / `--option api=…` runs them against `openai-completions` or
`anthropic-messages` instead (both keys get test values, the adapter passes on one).
"""

from __future__ import annotations

from roller.harnesses.acceptance import AcceptanceProfile
from roller.harnesses.pi.profile import NAME

_NO_SUBAGENTS = (
    "Pi has no delegation tool in roller's bundled profile (no extensions): "
    "subtasks are not_available_in_bundled_profile"
)

ACCEPTANCE = AcceptanceProfile(
    harness=NAME,
    credential_env=("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
    no_delegation=_NO_SUBAGENTS,
)

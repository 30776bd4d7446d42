"""Per-harness acceptance profiles: applicability and overrides, declared as data.

One module per harness, listed once in `PROFILES` (the same shape as
`roller.harnesses.HARNESSES`). A harness without a profile cannot run the suite.
"""

from __future__ import annotations

from roller.acceptance.profiles.claude_code import PROFILE as CLAUDE_CODE
from roller.acceptance.profiles.codex import PROFILE as CODEX
from roller.acceptance.profiles.gemini_cli import PROFILE as GEMINI_CLI
from roller.acceptance.profiles.opencode import PROFILE as OPENCODE
from roller.acceptance.profiles.pi import PROFILE as PI
from roller.acceptance.spec import HarnessProfile
from roller.errors import UsageError

PROFILES: tuple[HarnessProfile, ...] = (CLAUDE_CODE, OPENCODE, GEMINI_CLI, PI, CODEX)


def profile_for(harness: str) -> HarnessProfile:
    for profile in PROFILES:
        if profile.harness == harness:
            return profile
    known = ", ".join(p.harness for p in PROFILES)
    raise UsageError(f"no acceptance profile for harness {harness!r} (profiles: {known})")

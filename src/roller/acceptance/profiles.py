"""The acceptance profile of each harness, derived from the harness registry.

Each harness package declares its own (`roller.harnesses.<name>.acceptance`, the types in
`roller.harnesses.acceptance`); this module only looks them up. A harness without one
cannot run the suite.
"""

from __future__ import annotations

from roller.errors import UsageError
from roller.harnesses import registry
from roller.harnesses.acceptance import AcceptanceProfile


def profiles() -> tuple[AcceptanceProfile, ...]:
    return tuple(h.acceptance for h in registry().harnesses if h.acceptance is not None)


def profile_for(harness: str) -> AcceptanceProfile:
    for profile in profiles():
        if profile.harness == harness:
            return profile
    known = ", ".join(p.harness for p in profiles())
    raise UsageError(f"no acceptance profile for harness {harness!r} (profiles: {known})")

"""What the real-harness e2e tests share: the pinned harness installed into roller's
cache when missing (these tests never skip), the environment without provider keys, and
one concurrent acceptance run per harness. The CLI itself runs through
`tests.support.captures.roller`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from roller.acceptance.runner import Outcome, Plan, run_acceptance
from roller.harnesses import adapter_for
from roller.harnesses.install import Installed, find_installed
from tests.support.captures import roller


def installed(harness: str) -> Installed:
    """The pinned binary of `harness`, installed with `roller harness install` if missing."""
    adapter = adapter_for(harness)
    if find_installed(adapter) is None:
        done = roller("harness", "install", harness, timeout=600)
        assert done.returncode == 0, done.stderr
    found = find_installed(adapter)
    assert found is not None, f"{harness} is still not installed"
    return found


def without_provider_keys() -> dict[str, str]:
    """This process's environment minus every `*_API_KEY`/`*_AUTH_TOKEN` variable."""
    return {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}


def acceptance(
    harness: str,
    work_dir: Path,
    *,
    jobs: int = 4,
    options: Mapping[str, str] | None = None,
    scenarios: tuple[str, ...] = (),
    model: str | None = None,
    modes: tuple[str, ...] = (),
) -> dict[str, Outcome]:
    """The acceptance scenarios of `harness` (all, or `scenarios`) against the mock
    model, every mode of its profile, by `Outcome.label` (`mode/scenario` for a harness
    run several ways, else the scenario name)."""
    plan = Plan(
        harness=harness,
        work_dir=work_dir,
        jobs=jobs,
        options=dict(options or {}),
        scenarios=scenarios,
        model=model,
        modes=modes,
    )
    return {o.label: o for o in run_acceptance(plan)}

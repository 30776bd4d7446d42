"""Claude Code 2.1.332, the real binary, end to end: every acceptance scenario through
`roller collect` against the mock model (`roller.acceptance`, the same code as
`scripts/test_subagents_e2e.py`), plus the README command and the no-delegation mode.

The binary is installed into roller's cache by `roller harness install` when missing
(CI keeps the cache); these tests never skip. The scenarios run concurrently once per
session; each test reports one scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roller.acceptance.runner import Outcome, Plan, run_acceptance
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.reader import read_attempt
from roller.harnesses import adapter_for
from roller.harnesses.install import Installed, find_installed

pytestmark = pytest.mark.e2e


def _roller(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roller", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
        **kwargs,  # type: ignore[call-overload]
    )


@pytest.fixture(scope="session")
def claude_code() -> Installed:
    adapter = adapter_for("claude-code")
    if find_installed(adapter) is None:
        done = _roller("harness", "install", "claude-code")
        assert done.returncode == 0, done.stderr
    found = find_installed(adapter)
    assert found is not None
    return found


@pytest.fixture(scope="session")
def outcomes(
    claude_code: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome]:
    plan = Plan(harness="claude-code", work_dir=tmp_path_factory.mktemp("acceptance"), jobs=4)
    return {o.scenario: o for o in run_acceptance(plan)}


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_acceptance_scenario(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


def _no_provider_keys() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}


def test_readme_command_ends_with_the_call_tree(claude_code: Installed, tmp_path: Path) -> None:
    done = _roller(
        "collect", "--harness", "claude-code", "--api-base", "mock:spawn-one",
        "--capture-calls", "--prompt", "Use a subagent to say hi",
        "--run-dir", str(tmp_path / "demo"),
        env=_no_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = " ".join(done.stdout.split())  # the tree is wrapped to the terminal width
    assert "root" in shown and "child" in shown and "Agent(toolu_" in shown
    assert "capture complete" in shown and "lifecycle complete" in shown
    # Default retention cleaned raw/; the formal files still validate on their own.
    assert not list((tmp_path / "demo").glob("samples/*/capture/*/raw"))
    checked = _roller("validate", str(tmp_path / "demo"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_without_capture_calls_the_agent_tool_is_not_offered(
    claude_code: Installed, tmp_path: Path
) -> None:
    done = _roller(
        "collect", "--harness", "claude-code", "--api-base", "mock:spawn-one",
        "--prompt", "Use a subagent to say hi", "--run-dir", str(tmp_path / "run"),
        "--capture-debug", "full", "--json",
        env=_no_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    attempt = json.loads(done.stdout)["attempt_dir"]
    capture = read_attempt(Path(attempt))
    assert capture.calls
    for call in capture.calls:
        offered = {t["name"] for t in call.context["tools"]}
        assert "Bash" in offered and "Agent" not in offered
    assert [p.role for p in capture.manifest.participants] == ["root"]
    assert capture.manifest.capture_status == "complete"

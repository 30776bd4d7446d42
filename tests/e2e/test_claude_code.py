"""Claude Code 2.1.332, the real binary, end to end: every acceptance scenario through
`roller collect` against the mock model (`roller.acceptance`, the same code as
`scripts/test_subagents_e2e.py`), plus the README command and the no-delegation mode.

The binary is installed into roller's cache by `roller harness install` when missing
(CI keeps the cache); these tests never skip. The scenarios run concurrently once per
session; each test reports one scenario.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roller.acceptance.profiles import profile_for
from roller.acceptance.runner import Outcome
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.reader import read_attempt
from roller.harnesses.install import Installed
from tests.support.captures import roller
from tests.support.e2e import acceptance, installed, without_provider_keys

pytestmark = pytest.mark.e2e

PROFILE = profile_for("claude-code")


@pytest.fixture(scope="session")
def claude_code() -> Installed:
    return installed("claude-code")


@pytest.fixture(scope="session")
def outcomes(
    claude_code: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome]:
    return acceptance("claude-code", tmp_path_factory.mktemp("acceptance"))


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_acceptance_scenario(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    if name in PROFILE.not_applicable:  # reported, never counted as passed
        assert outcome.verdict == "NOT_APPLICABLE", outcome
        return
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


def test_readme_command_ends_with_the_call_tree(claude_code: Installed, tmp_path: Path) -> None:
    done = roller(
        "collect", "--harness", "claude-code", "--api-base", "mock:spawn-one",
        "--capture-calls", "--prompt", "Use a subagent to say hi",
        "--run-dir", str(tmp_path / "demo"),
        env=without_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = " ".join(done.stdout.split())  # the tree is wrapped to the terminal width
    assert "root" in shown and "child" in shown and "Agent(toolu_" in shown
    assert "capture complete" in shown and "lifecycle complete" in shown
    # Default retention cleaned raw/; the formal files still validate on their own.
    assert not list((tmp_path / "demo").glob("samples/*/capture/*/raw"))
    checked = roller("validate", str(tmp_path / "demo"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_without_capture_calls_the_agent_tool_is_not_offered(
    claude_code: Installed, tmp_path: Path
) -> None:
    done = roller(
        "collect", "--harness", "claude-code", "--api-base", "mock:spawn-one",
        "--prompt", "Use a subagent to say hi", "--run-dir", str(tmp_path / "run"),
        "--capture-debug", "full", "--json",
        env=without_provider_keys(),
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

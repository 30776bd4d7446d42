"""OpenCode 1.18.33, the real binary, end to end: every acceptance scenario through
`roller collect` against the mock model (`roller.acceptance`, the same code as
`scripts/test_subagents_e2e.py --harness opencode`), plus one run without
`--capture-calls` that also checks the prompt reaches OpenCode byte for byte.

The binary is installed into roller's cache by `roller harness install` when missing
(CI keeps the cache); these tests never skip. The scenarios run concurrently once per
session (each OpenCode start migrates a fresh database: tens of seconds on a loaded
machine); each test reports one scenario.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roller.acceptance.runner import Outcome
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.reader import read_attempt
from roller.harnesses.install import Installed
from tests.support.captures import roller
from tests.support.e2e import acceptance, installed, without_provider_keys

pytestmark = pytest.mark.e2e

# A prompt argv would mangle: spaces (OpenCode quotes such an argument), a newline,
# double quotes, and a leading dash.
PROMPT = '-Use a subagent\nto say  "hi"'


@pytest.fixture(scope="session")
def opencode() -> Installed:
    return installed("opencode")


@pytest.fixture(scope="session")
def outcomes(opencode: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return acceptance("opencode", tmp_path_factory.mktemp("acceptance"))


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_acceptance_scenario(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    if name == "background":
        # Not expressible with the pinned task schema: reported, never passed.
        assert outcome.verdict == "NOT_APPLICABLE"
        assert "background parameter" in outcome.reasons[0]
        return
    if name == "fork":  # no history fork in the task tool: reported, never passed
        assert outcome.verdict == "NOT_APPLICABLE"
        assert "no history fork" in outcome.reasons[0]
        return
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


@pytest.mark.parametrize("name", ["single", "parallel", "nested"])
def test_every_child_call_names_its_native_parent(outcomes: dict[str, Outcome], name: str) -> None:
    """A real child's `x-parent-session-id` is its session's `parent_id` in the store
    (finalize's parent cross-check); a root's calls name no parent."""
    run_dir = outcomes[name].run_dir
    assert run_dir is not None
    (attempt,) = run_dir.glob("samples/*/capture/attempt-*")
    capture = read_attempt(attempt)
    roles = {p.participant_id: p.role for p in capture.manifest.participants}
    checks = {
        role: {
            c.attribution.parent_cross_check
            for c in capture.calls
            if roles.get(c.participant_id or "") == role
        }
        for role in ("root", "child")
    }
    assert checks == {"root": {None}, "child": {"agree"}}
    assert "parent_disagreement" not in {e.code for e in capture.manifest.capture_errors}


def test_capture_calls_needs_an_explicit_api_base(tmp_path: Path) -> None:
    done = roller(
        "collect", "--harness", "opencode", "--capture-calls", "--prompt", "hi",
        "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 2 and "--api-base" in done.stderr
    assert not (tmp_path / "run").exists()


def test_without_capture_calls_task_is_denied_and_the_prompt_is_exact(
    opencode: Installed, tmp_path: Path
) -> None:
    done = roller(
        "collect", "--harness", "opencode", "--api-base", "mock:spawn-one",
        "--prompt", PROMPT, "--run-dir", str(tmp_path / "run"), "--capture-debug", "full",
        env=without_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = " ".join(done.stdout.split())  # the call tree, wrapped to the terminal width
    assert "root" in shown and "capture complete" in shown and "lifecycle complete" in shown
    (attempt,) = (tmp_path / "run").glob("samples/*/capture/attempt-*")
    capture = read_attempt(attempt)
    assert [p.role for p in capture.manifest.participants] == ["root"]
    assert capture.manifest.capture_status == "complete" and capture.relations == []
    agent_calls = [c for c in capture.calls if c.context.get("tools")]
    assert agent_calls
    for call in agent_calls:
        offered = {t["function"]["name"] for t in call.context["tools"]}
        assert "bash" in offered and "task" not in offered
        # The prompt arrives exactly as given, on the wire...
        users = [m["content"] for m in call.context["messages"] if m["role"] == "user"]
        assert json.dumps(users).count(json.dumps(PROMPT)[1:-1]) == 1
    # ...and in OpenCode's own store.
    db = attempt / "raw" / "native" / "opencode.db"
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        texts = [
            json.loads(raw).get("text")
            for (raw,) in conn.execute("SELECT data FROM part ORDER BY id").fetchall()
        ]
    assert PROMPT in texts

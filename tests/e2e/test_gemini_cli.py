"""Gemini CLI 0.61.0, the real binary, end to end: every acceptance scenario through
`roller collect` against the mock model (`roller.acceptance`, the same code as
`scripts/test_subagents_e2e.py`), plus the attribution rule on the live parallel run and
the no-delegation mode.

The binary is installed into roller's cache by `roller harness install` when missing
(CI keeps the cache); these tests never skip. The scenarios run concurrently once per
session; each test reports one scenario.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from roller.acceptance.profiles import profile_for
from roller.acceptance.runner import Outcome
from roller.acceptance.scenarios import SCENARIOS
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs
from roller.capture.reader import read_attempt, read_json_model
from roller.capture.tape import read_tape
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for
from roller.harnesses.install import Installed
from tests.support.captures import roller
from tests.support.e2e import acceptance, installed, without_provider_keys

pytestmark = pytest.mark.e2e

PROFILE = profile_for("gemini-cli")
NOT_APPLICABLE = {"nested", "background", "fork"}
APPLICABLE = [s.name for s in SCENARIOS if s.name not in NOT_APPLICABLE]


@pytest.fixture(scope="session")
def gemini_cli() -> Installed:
    return installed("gemini-cli")


@pytest.fixture(scope="session")
def outcomes(gemini_cli: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return acceptance("gemini-cli", tmp_path_factory.mktemp("acceptance"))


@pytest.mark.parametrize("name", APPLICABLE)
def test_acceptance_scenario(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_inexpressible_scenario_is_not_applicable_never_passed(
    outcomes: dict[str, Outcome], name: str
) -> None:
    outcome = outcomes[name]
    assert outcome.verdict == "NOT_APPLICABLE"
    assert outcome.reasons == (PROFILE.not_applicable[name],)
    assert outcome.run_dir is None  # nothing ran


def test_parallel_children_attributed_by_response_id_not_by_order(
    outcomes: dict[str, Outcome],
) -> None:
    """On the live two-children run: every call is joined by its response id, and
    finalizing the same tape in reverse arrival order gives every call the same owner."""
    run_dir = outcomes["parallel"].run_dir
    assert run_dir is not None
    (attempt,) = run_dir.glob("samples/*/capture/attempt-*")
    capture = read_attempt(attempt)
    children = [p for p in capture.manifest.participants if p.role == "child"]
    assert len(children) == 2
    for call in capture.calls:
        assert call.identity_status == "attributed"
        assert call.attribution.basis == "native:response_id"
        assert call.response_id is not None and call.attribution.key == call.response_id
    paths = AttemptPaths(attempt)
    tape = read_tape(paths.tape)
    native = adapter_for("gemini-cli").read_native(paths.native)
    inputs = read_json_model(paths.attempt_inputs, AttemptInputs)

    def owners(order: list[int]) -> dict[str, str | None]:
        shuffled = replace(tape, exchanges=tuple(tape.exchanges[i] for i in order))
        built = build_capture(inputs, shuffled, native)
        keys = {
            p.participant_id: p.native_ids.get("agent_id", "root")
            for p in built.manifest.participants
        }
        return {c.exchange_id: keys.get(c.participant_id or "") for c in built.calls}

    forward = owners(list(range(len(tape.exchanges))))
    assert forward == owners(list(reversed(range(len(tape.exchanges)))))
    assert sorted(set(forward.values()), key=str) == sorted(
        {"root", *(p.native_ids["agent_id"] for p in children)}
    )


def test_without_capture_calls_invoke_agent_is_not_offered(
    gemini_cli: Installed, tmp_path: Path
) -> None:
    done = roller(
        "collect", "--harness", "gemini-cli", "--api-base", "mock:spawn-one",
        "--prompt", "Use a subagent to say hi", "--run-dir", str(tmp_path / "run"),
        "--capture-debug", "full", "--json",
        env=without_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    capture = read_attempt(Path(json.loads(done.stdout)["attempt_dir"]))
    agent_calls = [c for c in capture.calls if not c.json_mode]
    assert agent_calls
    for call in agent_calls:
        offered = {d["name"] for t in call.context["tools"] for d in t["functionDeclarations"]}
        assert "run_shell_command" in offered and "invoke_agent" not in offered
    assert [p.role for p in capture.manifest.participants] == ["root"]
    assert capture.manifest.capture_status == "complete"

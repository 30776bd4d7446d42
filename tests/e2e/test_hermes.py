"""Hermes Agent 0.19.0, the real program, end to end: every acceptance scenario through
`roller collect` against the mock model in Chat Completions mode (the default), the
delegating and tool scenarios again in Responses and Anthropic Messages modes, and the
Hermes-only `batched` scenario: one `delegate_task` call, two children.

`background` and `fork` must come back NOT_APPLICABLE (never counted as passed). The
program is installed into roller's cache when missing; nothing is skipped.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from roller.acceptance.runner import Outcome, Plan, run_acceptance
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.reader import read_attempt
from roller.harnesses.install import Installed
from tests.support.e2e import installed

pytestmark = pytest.mark.e2e

MODES = {
    "chat_completions": "openai-chat-completions",
    "codex_responses": "openai-responses",
    "anthropic_messages": "anthropic-messages",
}
NOT_APPLICABLE = ("background", "fork")
ALL = (*SCENARIO_NAMES, "batched")
# the other modes: a delegation, the batch, a failing tool, nothing at all
SUBSET = ("single", "batched", "tool-error", "plain")


@pytest.fixture(scope="session")
def hermes() -> Installed:
    return installed("hermes")


@pytest.fixture(scope="session")
def outcomes(
    hermes: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Outcome]:
    def run(mode: str) -> list[Outcome]:
        work = tmp_path_factory.mktemp(f"acceptance-{mode}")
        scenarios = () if mode == "chat_completions" else SUBSET
        plan = Plan(
            harness="hermes",
            work_dir=work,
            jobs=2,
            scenarios=scenarios,
            options={"api-mode": mode},
        )
        return run_acceptance(plan)

    with ThreadPoolExecutor(len(MODES)) as pool:
        per_mode = dict(zip(MODES, pool.map(run, MODES), strict=True))
    return {(mode, o.scenario): o for mode, runs in per_mode.items() for o in runs}


def _attempt(outcome: Outcome) -> Path:
    assert outcome.run_dir is not None
    (attempt,) = outcome.run_dir.glob("samples/*/capture/attempt-*")
    return attempt


@pytest.mark.parametrize(
    ("mode", "name"),
    [("chat_completions", n) for n in ALL if n not in NOT_APPLICABLE]
    + [(m, n) for m in MODES if m != "chat_completions" for n in SUBSET],
)
def test_acceptance_scenario(
    outcomes: dict[tuple[str, str], Outcome], mode: str, name: str
) -> None:
    outcome = outcomes[(mode, name)]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)
    capture = read_attempt(_attempt(outcome))
    generation = [c for c in capture.calls if c.kind == "generation"]
    assert {c.protocol for c in generation} == {MODES[mode]}
    assert capture.manifest.capabilities.subtasks == "supported"


@pytest.mark.parametrize("name", NOT_APPLICABLE)
def test_what_hermes_cannot_express_is_not_applicable(
    outcomes: dict[tuple[str, str], Outcome], name: str
) -> None:
    outcome = outcomes[("chat_completions", name)]
    assert outcome.verdict == "NOT_APPLICABLE" and outcome.run_dir is None


@pytest.mark.parametrize("mode", MODES)
def test_one_batched_delegation_two_children_one_tool_call(
    outcomes: dict[tuple[str, str], Outcome], mode: str
) -> None:
    capture = read_attempt(_attempt(outcomes[(mode, "batched")]))
    children = [p for p in capture.manifest.participants if p.role == "child"]
    assert len(children) == 2
    assert all(p.call_ids for p in children)
    assert not set(children[0].call_ids) & set(children[1].call_ids)
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert {r.child_participant_id for r in spawns} == {p.participant_id for p in children}
    assert len({r.tool_call_id for r in spawns}) == 1
    assert len({r.source_call_id for r in spawns}) == 1
    assert all(r.status == "established" for r in spawns)

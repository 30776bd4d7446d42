"""Pi 0.73.1, the real binary, end to end: every acceptance scenario through `roller
collect` against the mock model, once per API roller configures (`openai-responses`,
the default; `openai-completions`; `anthropic-messages`).

Pi has no delegation tool in roller's profile: the subagent scenarios must come back
NOT_APPLICABLE (never counted as passed), `plain` and `tool-error` must pass for every
API. The binary is installed into roller's cache when missing; nothing is skipped.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from roller.acceptance.profiles import profile_for
from roller.acceptance.runner import Outcome, Plan, run_acceptance
from roller.acceptance.scenarios import SCENARIOS, scenario
from roller.capture.reader import read_attempt
from roller.harnesses.install import Installed
from tests.support.e2e import installed

pytestmark = pytest.mark.e2e

APIS = ("openai-responses", "openai-completions", "anthropic-messages")
PROTOCOL = {
    "openai-responses": "openai-responses",
    "openai-completions": "openai-chat-completions",
    "anthropic-messages": "anthropic-messages",
}
APPLICABLE = ("plain", "tool-error")
NOT_APPLICABLE = [s.name for s in SCENARIOS if s.name not in APPLICABLE]


@pytest.fixture(scope="session")
def pi() -> Installed:
    return installed("pi")


@pytest.fixture(scope="session")
def outcomes(
    pi: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Outcome]:
    def run(api: str) -> list[Outcome]:
        work = tmp_path_factory.mktemp(f"acceptance-{api}")
        return run_acceptance(Plan(harness="pi", work_dir=work, jobs=2, options={"api": api}))

    with ThreadPoolExecutor(len(APIS)) as pool:
        per_api = dict(zip(APIS, pool.map(run, APIS), strict=True))
    return {(api, o.scenario): o for api, runs in per_api.items() for o in runs}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name", APPLICABLE)
def test_acceptance_scenario(outcomes: dict[tuple[str, str], Outcome], api: str, name: str) -> None:
    outcome = outcomes[(api, name)]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)
    assert outcome.run_dir is not None
    (attempt,) = outcome.run_dir.glob("samples/*/capture/attempt-*")
    capture = read_attempt(attempt)
    assert {c.protocol for c in capture.calls} == {PROTOCOL[api]}
    assert capture.manifest.capabilities.subtasks == "not_available_in_bundled_profile"
    (root,) = capture.manifest.participants
    for call in capture.calls:
        # the Responses API sends the session id; where it does, it must agree
        expected = "agree" if api == "openai-responses" else "absent"
        assert call.attribution.cross_check == expected
        if api == "openai-responses":
            assert call.attribution.wire_participant_key == root.native_ids["session_id"]


@pytest.mark.parametrize("name", NOT_APPLICABLE)
def test_subagent_scenarios_are_not_applicable_never_passed(
    outcomes: dict[tuple[str, str], Outcome], name: str
) -> None:
    for api in APIS:
        outcome = outcomes[(api, name)]
        assert outcome.verdict == "NOT_APPLICABLE"
        assert outcome.reasons == (profile_for("pi").resolve(scenario(name)),)
        assert outcome.run_dir is None

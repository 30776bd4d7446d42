"""DeepSeek Harness 0.2.1rc2, the real program through roller's driver, end to end.

- Default profile `sdk-minimal` (root only): `plain` and `tool-error` pass, every subagent
  scenario is NOT_APPLICABLE (never counted as passed), and the manifest declares
  `subtasks: not_available_in_bundled_profile`.
- `--option profile=sdk`: every applicable scenario passes (`subagent`, background, with
  the notice turn); `fork` runs two prompts and its child's copied prefix is marked.
The program is installed into roller's cache when missing; nothing is skipped.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from roller.acceptance.runner import Outcome, Plan, run_acceptance
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.reader import read_attempt
from roller.harnesses.install import Installed
from tests.support.e2e import installed

pytestmark = pytest.mark.e2e

MINIMAL_APPLICABLE = ("plain", "tool-error")
SDK_NOT_APPLICABLE = ("foreground", "tool-config")
PROFILES = ("sdk-minimal", "sdk")


@pytest.fixture(scope="session")
def deepseek() -> Installed:
    return installed("deepseek")


@pytest.fixture(scope="session")
def outcomes(
    deepseek: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Outcome]:
    def run(profile: str) -> list[Outcome]:
        work = tmp_path_factory.mktemp(f"acceptance-{profile}")
        plan = Plan(harness="deepseek", work_dir=work, jobs=2, options={"profile": profile})
        return run_acceptance(plan)

    with ThreadPoolExecutor(len(PROFILES)) as pool:
        per = dict(zip(PROFILES, pool.map(run, PROFILES), strict=True))
    return {(p, o.scenario): o for p, runs in per.items() for o in runs}


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_sdk_minimal(outcomes: dict[tuple[str, str], Outcome], name: str) -> None:
    outcome = outcomes[("sdk-minimal", name)]
    if name not in MINIMAL_APPLICABLE:
        assert outcome.verdict == "NOT_APPLICABLE"
        assert "not_available_in_bundled_profile" in outcome.reasons[0]
        assert outcome.run_dir is None
        return
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)
    assert outcome.run_dir is not None
    (attempt,) = outcome.run_dir.glob("samples/*/capture/attempt-*")
    manifest = read_attempt(attempt).manifest
    assert manifest.capabilities.subtasks == "not_available_in_bundled_profile"
    assert [p.role for p in manifest.participants] == ["root"]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_sdk(outcomes: dict[tuple[str, str], Outcome], name: str) -> None:
    outcome = outcomes[("sdk", name)]
    if name in SDK_NOT_APPLICABLE:
        assert outcome.verdict == "NOT_APPLICABLE" and outcome.run_dir is None
        return
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)
    assert outcome.run_dir is not None
    (attempt,) = outcome.run_dir.glob("samples/*/capture/attempt-*")
    capture = read_attempt(attempt)
    assert capture.manifest.capabilities.subtasks == "supported"
    for call in capture.calls:
        assert "run_id" in call.native_identity
    if name == "fork":
        (child,) = [p for p in capture.manifest.participants if p.role == "child"]
        assert child.inherited_context is not None
        assert child.inherited_context.checked and child.inherited_context.items > 0

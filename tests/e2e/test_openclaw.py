"""OpenClaw 2026.9.6 (Node 24.22.3), the real binary, end to end: every applicable shared
acceptance scenario plus OpenClaw's own `announce`, through `roller collect` against the
mock model, each sample with its own loopback Gateway started and stopped by roller.

The default scenarios run on OpenClaw's default tool surface (Tool Search: the spawn is a
`tool_call`); `announce` and `tool-config` on the direct one (`sessions_spawn`).
`foreground` must come back NOT_APPLICABLE (every spawn is a background run). The binary
is installed into roller's cache when missing; nothing is skipped. About 6 minutes with
two scenarios at a time on two busy cores.
"""

from __future__ import annotations

import pytest

from roller.acceptance.runner import Outcome
from roller.acceptance.scenarios import SCENARIOS
from roller.capture.models import CallRecord
from roller.capture.reader import Capture, read_attempt
from roller.harnesses.install import Installed
from roller.harnesses.openclaw.acceptance import ACCEPTANCE
from tests.support.e2e import acceptance, installed

# The session fixture runs the whole suite once (one Gateway start per scenario): the
# first test waits for it, beyond pytest-timeout's default 300 s.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

APPLICABLE = [s.name for s in SCENARIOS if s.name not in ACCEPTANCE.not_applicable] + ["announce"]


@pytest.fixture(scope="session")
def openclaw() -> Installed:
    return installed("openclaw")


@pytest.fixture(scope="session")
def outcomes(openclaw: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return acceptance("openclaw", tmp_path_factory.mktemp("acceptance-openclaw"), jobs=2)


def _capture(outcome: Outcome) -> Capture:
    assert outcome.run_dir is not None
    (attempt,) = outcome.run_dir.glob("samples/*/capture/attempt-*")
    return read_attempt(attempt)


def _spawning(capture: Capture) -> list[CallRecord]:
    spawn_calls = {r.source_call_id for r in capture.relations if r.type == "spawn"}
    return [c for c in capture.calls if c.call_id in spawn_calls]


@pytest.mark.parametrize("name", APPLICABLE)
def test_acceptance_scenario(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


def test_foreground_is_not_applicable_never_passed(outcomes: dict[str, Outcome]) -> None:
    assert outcomes["foreground"].verdict == "NOT_APPLICABLE"


def test_both_tool_surfaces_spawn(outcomes: dict[str, Outcome]) -> None:
    bridged = _spawning(_capture(outcomes["single"]))
    direct = _spawning(_capture(outcomes["announce"]))
    assert [t.name for c in bridged for t in c.tool_refs.emitted] == ["tool_call"]
    assert [t.name for c in direct for t in c.tool_refs.emitted] == ["sessions_spawn"]


def test_the_announce_call_is_bound_by_its_run_and_ids_are_normalised(
    outcomes: dict[str, Outcome],
) -> None:
    capture = _capture(outcomes["announce"])
    calls = {c.call_id: c for c in capture.calls}
    (delivered,) = [r for r in capture.relations if r.type == "result_delivered"]
    target = calls[delivered.target_call_id or ""]
    (child,) = [p for p in capture.manifest.participants if p.role == "child"]
    # its announce run, or (the child ended first) the message steered into the parent's turn
    announce = f"announce:v1:{child.native_ids['session_key']}:"
    assert target.native_identity["notification_id"].startswith(announce)
    in_context = [
        calls[r.target_call_id or ""]
        for r in capture.relations
        if r.type == "result_in_context" and r.child_participant_id == child.participant_id
    ]
    assert in_context[0] is target
    assert all(c.native_identity["notification_id"].startswith(announce) for c in in_context)
    # Chat Completions replays tool ids rewritten: the capture holds the mapping it used
    (mapping,) = capture.manifest.tool_id_map or []
    assert mapping.seen and mapping.context_id == "".join(
        ch for ch in mapping.output_id if ch.isalnum()
    )
    assert all(c.native_identity.get("run_id") for c in capture.calls)

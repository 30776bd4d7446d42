"""`--harness generic --single-agent`: a plain program is one agent.

Three calls through the official SDKs (Anthropic Messages, OpenAI Chat Completions, OpenAI
Responses) without any x-roller-* header: with the declaration they belong to one root
participant whose evidence is the declaration, and are exportable; without it they stay
unattributed as before; and headers that declare participants still decide.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.collect.runs_support import AGENT
from tests.support.captures import only_attempt, roller

from roller.capture.integrity import validate_attempt
from roller.export.trajectory import build_trajectory


def collect(run_dir: Path, mode: str, *flags: str) -> tuple[int, str]:
    done = roller(
        "collect", "--harness", "generic", *flags, "--api-base", "mock:plain",
        "--capture-debug", "full", "--run-dir", str(run_dir),
        "--", sys.executable, str(AGENT), mode,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def test_three_sdk_calls_of_a_declared_single_agent_are_attributed_and_exportable(
    tmp_path: Path,
) -> None:
    code, out = collect(tmp_path / "run", "sdks", "--single-agent")
    assert code == 0, out
    capture = only_attempt(tmp_path / "run")
    assert validate_attempt(capture.paths).ok
    assert [c.protocol for c in capture.calls] == [
        "anthropic-messages", "openai-chat-completions", "openai-responses",
    ]  # fmt: skip
    (root,) = capture.manifest.participants
    assert root.role == "root" and root.call_ids == [c.call_id for c in capture.calls]
    assert [e.source for e in root.evidence][-1] == "declared:single_agent"
    for call in capture.calls:
        assert (call.identity_status, call.export_status) == ("attributed", "exportable")
        assert call.attribution.basis == "declared:single_agent"
    assert capture.manifest.capabilities.identity_evidence == "declared_single_agent"
    assert capture.manifest.capture_status == "complete"
    assert capture.manifest.counts.exportable_calls == 3
    # the main trajectory is the root's, so it can be built (protocols change: segments)
    assert build_trajectory(capture).root_participant_id == root.participant_id


def test_without_the_declaration_the_calls_stay_unattributed(tmp_path: Path) -> None:
    code, _ = collect(tmp_path / "run", "sdks")
    assert code == 1
    capture = only_attempt(tmp_path / "run")
    assert capture.manifest.participants == []
    assert {c.identity_status for c in capture.calls} == {"unattributed"}
    assert capture.manifest.capabilities.identity_evidence is None
    assert "identity_evidence" not in capture.paths.manifest.read_text()


def test_headers_that_declare_participants_override_the_declaration(tmp_path: Path) -> None:
    code, out = collect(tmp_path / "run", "delegate", "--single-agent")
    assert code == 0, out
    capture = only_attempt(tmp_path / "run")
    assert sorted(p.role for p in capture.manifest.participants) == ["child", "root"]
    assert {c.attribution.basis for c in capture.calls} == {"wire:roller-headers"}
    assert capture.manifest.capabilities.identity_evidence is None
    assert any(
        n.startswith("declared_single_agent_overridden:")
        for n in capture.manifest.capabilities.notes
    )


def test_refinalizing_keeps_the_declaration(tmp_path: Path) -> None:
    code, out = collect(tmp_path / "run", "plain", "--single-agent")
    assert code == 0, out
    attempt = only_attempt(tmp_path / "run").paths
    before = {p.name: p.read_bytes() for p in (attempt.manifest, attempt.calls, attempt.relations)}
    assert roller("finalize", str(attempt.root)).returncode == 0
    after = {p.name: p.read_bytes() for p in (attempt.manifest, attempt.calls, attempt.relations)}
    assert after == before


def test_the_declaration_is_refused_for_a_harness_that_runs_its_own_agent(tmp_path: Path) -> None:
    done = roller(
        "collect", "--harness", "pi", "--single-agent", "--prompt", "hi",
        "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 2
    assert "--single-agent declares your command one agent" in done.stderr
    assert not (tmp_path / "run").exists()

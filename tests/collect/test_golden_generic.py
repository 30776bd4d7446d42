"""Golden capture of a small SDK program collected with `roller collect --harness generic`.

The program (tests/golden/generic/agent.py) uses the official anthropic and openai SDKs
against the built-in mock model: root calls with a tool round trip, two children declared
with roller's explicit headers (one nested under the other), and one call carrying only
Claude Code's headers, which the generic harness must not trust. The capture must
validate and match the checked-in expectation (set ROLLER_UPDATE_GOLDEN=1 to rewrite it
after a deliberate change, then review the diff).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from tests.support.captures import REPO, only_attempt, roller, summarize

from roller.capture.integrity import validate_attempt
from roller.capture.layout import SamplePaths
from roller.export.trajectory import build_trajectory
from roller.export.trajectory_file import read_trajectory

GOLDEN = REPO / "tests" / "golden" / "generic"


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("golden") / "run"
    proc = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        f"mock:{GOLDEN / 'scenario.toml'}",
        "--capture-calls",
        "--run-dir",
        str(run_dir),
        "--",
        sys.executable,
        str(GOLDEN / "agent.py"),
    )
    # The impostor call is unattributed, so the capture is partial: exit 1, still written.
    assert proc.returncode == 1, proc.stderr
    assert "unattributed" in proc.stdout
    return run_dir


def test_golden_capture_validates(golden_run: Path) -> None:
    capture = only_attempt(golden_run)
    report = validate_attempt(capture.paths)
    assert report.ok, report.problems
    assert roller("validate", str(golden_run)).returncode == 0


def test_golden_capture_matches_expectation(golden_run: Path) -> None:
    actual = summarize(only_attempt(golden_run))
    expected_file = GOLDEN / "expected.json"
    if os.environ.get("ROLLER_UPDATE_GOLDEN"):
        expected_file.write_text(json.dumps(actual, indent=2) + "\n")
    assert actual == json.loads(expected_file.read_text())


def test_untrusted_harness_headers_leave_the_call_unattributed(golden_run: Path) -> None:
    capture = only_attempt(golden_run)
    impostor = capture.calls[-1]
    assert ("x-claude-code-agent-id", "a0123456789abcdef") in [
        tuple(h) for h in impostor.request.headers
    ]
    assert impostor.identity_status == "unattributed"
    assert impostor.participant_id is None
    assert impostor.export_blocked_by == ["identity_unattributed"]


def test_no_main_trajectory_while_a_call_is_unattributed(golden_run: Path) -> None:
    """The impostor call may be a root turn: the root's trajectory is withheld, saying why."""
    capture = only_attempt(golden_run)
    stored = read_trajectory(SamplePaths(golden_run / "samples" / "sample-0001").trajectory_file(1))
    assert stored == build_trajectory(capture)
    assert (stored.built, stored.segments, stored.export_blocked_by) == (
        False,
        [],
        ["unattributed_calls"],
    )
    assert [p.call_id for p in stored.problems] == [capture.calls[-1].call_id]
    (root,) = [p for p in capture.manifest.participants if p.role == "root"]
    assert (stored.root_participant_id, stored.call_ids) == (root.participant_id, root.call_ids)


def test_explicit_headers_declare_nested_children(golden_run: Path) -> None:
    capture = only_attempt(golden_run)
    by_agent = {p.native_ids.get("x-roller-agent-id"): p for p in capture.manifest.participants}
    root = by_agent[None]
    planner, worker = by_agent["planner"], by_agent["worker"]
    assert (root.role, root.depth, root.parent_participant_id) == ("root", 0, None)
    assert (planner.role, planner.depth, planner.parent_participant_id) == (
        "child",
        1,
        root.participant_id,
    )
    assert (worker.role, worker.depth, worker.parent_participant_id) == (
        "child",
        2,
        planner.participant_id,
    )


def test_no_secret_reaches_disk(golden_run: Path) -> None:
    placeholder = b"sk-roller-mock-placeholder"
    for path in golden_run.rglob("*"):
        if path.is_file():
            assert placeholder not in path.read_bytes(), path


def test_refinalize_is_byte_identical(golden_run: Path, tmp_path: Path) -> None:
    capture = only_attempt(golden_run)
    attempt = capture.paths
    before = {
        name: (attempt.root / name).read_bytes()
        for name in ("manifest.json", "calls.jsonl", "relations.jsonl")
    }
    proc = roller("finalize", str(attempt.root))
    assert proc.returncode == 0, proc.stderr
    after = {name: (attempt.root / name).read_bytes() for name in before}
    assert after == before


def test_view_json_lists_every_call_once(golden_run: Path) -> None:
    proc = roller("view", "--json", str(golden_run))
    assert proc.returncode == 0, proc.stderr
    tree = json.loads(proc.stdout)

    def calls(node: dict) -> list[int]:  # type: ignore[type-arg]
        out = []
        for c in node["calls"]:
            out.append(c["sequence"])
            for child in c["children"]:
                out += calls(child)
        for child in node["unknown"]:
            out += calls(child)
        return out

    seen = [s for root in tree["roots"] for s in calls(root)] + [
        c["sequence"] for c in tree["unattributed"]
    ]
    assert sorted(seen) == list(range(6))
    assert tree["summary"]["unattributed_calls"] == 1

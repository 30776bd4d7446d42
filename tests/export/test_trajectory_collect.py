"""The main trajectory of fresh `roller collect --harness generic` runs against the mock:
a root that compacts its own history, and a root that loads a tool at run time
(tests/export/trajectory_agent.py); also what collect stores under the sample's
trajectory/ and `roller export trajectory` (the CLI). The golden program's trajectory
is checked with its own run, in tests/collect/test_golden_generic.py."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from roller.capture.integrity import validate_attempt
from roller.capture.layout import SamplePaths
from roller.capture.reader import Capture
from roller.export.trajectory import build_trajectory
from roller.export.trajectory_file import read_trajectory, serialize
from tests.support.captures import REPO, only_attempt, roller

SCENARIO = REPO / "tests" / "golden" / "generic" / "scenario.toml"
AGENT = Path(__file__).with_name("trajectory_agent.py")
PROGRAMS = ("compaction", "dynamic")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One real collect per program, run concurrently (each is its own process tree)."""
    base = tmp_path_factory.mktemp("trajectory-runs")

    def collect(name: str) -> tuple[str, Path]:
        run_dir = base / name
        proc = roller(
            "collect",
            "--harness",
            "generic",
            "--api-base",
            f"mock:{SCENARIO}",
            "--capture-calls",
            "--run-dir",
            str(run_dir),
            "--",
            sys.executable,
            str(AGENT),
            name,
        )
        assert "main trajectory:" in proc.stderr, proc.stderr
        return name, run_dir

    with ThreadPoolExecutor(len(PROGRAMS)) as pool:
        return dict(pool.map(collect, PROGRAMS))


def _stored(run_dir: Path) -> Path:
    return SamplePaths(run_dir / "samples" / "sample-0001").trajectory_file(1)


def _root_ids(capture: Capture) -> list[str]:
    (root,) = [p for p in capture.manifest.participants if p.role == "root"]
    return root.call_ids


def test_compaction_gives_two_segments_and_no_child_message(runs: dict[str, Path]) -> None:
    capture = only_attempt(runs["compaction"])
    root_ids = _root_ids(capture)
    record = build_trajectory(capture)
    assert (record.export_status, record.call_ids) == ("exportable", root_ids)
    before, after = record.segments
    assert [r.call_id for r in before.requests] == root_ids[:2]
    assert [r.call_id for r in after.requests] == root_ids[2:]
    assert (after.start.reason, after.start.previous_segment) == ("not_a_continuation", 0)
    assert after.start.detail is not None
    assert after.start.detail.startswith("input item 0 (user message) differs")
    # Each segment is the conversation the root actually had, never stitched.
    assert after.messages[0].message == {
        "role": "user",
        "content": "Summary of the conversation so far: roller records agents. Continue the task.",
    }
    assert [m.source for m in before.messages] == ["input", "output", "input", "output"]
    assert [m.source for m in after.messages] == ["input", "output", "input", "output"]
    # The planner child's call made between the two is in no segment.
    (child,) = [c for c in capture.calls if c.call_id not in root_ids]
    assert child.participant_id is not None and child.identity_status == "attributed"
    text = json.dumps([s.model_dump(mode="json") for s in record.segments])
    assert "Plan the work." not in text and child.call_id not in text


def test_tools_loaded_at_run_time_block_the_trajectory_not_the_calls(
    runs: dict[str, Path],
) -> None:
    capture = only_attempt(runs["dynamic"])
    root_ids = _root_ids(capture)
    record = build_trajectory(capture)
    assert (record.built, record.export_status, record.export_blocked_by) == (
        True,
        "blocked",
        ["dynamic_tools"],
    )
    messages = " ".join(p.message for p in record.problems)
    assert "tool_search_output" in messages and "the tools changed" in messages
    segment = record.segments[0]
    assert [[t["name"] for t in s.tools] for s in segment.tool_snapshots] == [
        ["lookup"],
        ["lookup", "fetch"],
    ]
    assert [s.call_ids for s in segment.tool_snapshots] == [root_ids[:1], root_ids[1:]]
    # The loading items stay in the history, verbatim, in their place.
    kinds = [m.message.get("type") for m in segment.messages if isinstance(m.message, dict)]
    assert kinds[-3:] == ["tool_search_call", "tool_search_output", "message"]
    # Per-call export is unaffected.
    calls = roller("export", "calls", str(runs["dynamic"]))
    assert calls.returncode == 0, calls.stderr
    assert [json.loads(line)["call_id"] for line in calls.stdout.splitlines()] == root_ids


def test_collect_stores_the_trajectory_outside_the_capture(runs: dict[str, Path]) -> None:
    capture = only_attempt(runs["compaction"])
    stored = _stored(runs["compaction"])
    assert stored.parent == capture.paths.root.parent.parent / "trajectory"
    assert stored.read_text(encoding="utf-8") == serialize(build_trajectory(capture)) + "\n"
    assert read_trajectory(stored) == build_trajectory(capture)
    assert set(capture.manifest.files) == {"calls.jsonl", "relations.jsonl"}
    assert validate_attempt(capture.paths).ok


def test_export_trajectory_cli(runs: dict[str, Path], tmp_path: Path) -> None:
    exported = roller("export", "trajectory", str(runs["compaction"]))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == _stored(runs["compaction"]).read_text(encoding="utf-8")
    assert "exported 1 trajectory" in exported.stderr

    blocked = roller("export", "trajectory", str(runs["dynamic"]))
    assert (blocked.returncode, blocked.stdout) == (0, "")
    assert "left out 1 (1 blocked:dynamic_tools) (--include-blocked to include)" in blocked.stderr

    out = tmp_path / "t.jsonl"
    included = roller(
        "export", "trajectory", str(runs["dynamic"]), "--include-blocked", "--out", str(out)
    )
    assert included.returncode == 0, included.stderr
    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["export_blocked_by"] == ["dynamic_tools"]
    assert json.loads(line)["schema"] == "roller.trajectory/v1"


def test_export_trajectory_refuses_an_invalid_capture(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    attempt = only_attempt(runs["compaction"]).paths.root
    broken = tmp_path / "attempt-0001"
    broken.mkdir()
    for name in ("manifest.json", "relations.jsonl"):
        (broken / name).write_bytes((attempt / name).read_bytes())
    (broken / "calls.jsonl").write_bytes((attempt / "calls.jsonl").read_bytes()[:-40] + b"\n")
    proc = roller("export", "trajectory", str(broken))
    assert proc.returncode != 0 and proc.stdout == ""
    assert "does not validate" in proc.stderr

"""Codex code mode over real runs: spawns a script made, bound to its `exec` call.

The fixtures (tests/data/harnesses/codex/, regenerate.py) are real Codex 0.171.0 runs
against `roller mock-model` in code mode: `code-v2-single` (the catalog default, v2 tools
called directly), `code-v1-exec-single` / `code-v1-exec-parallel` (gpt-5.6-luna: v1
tools deferred inside `exec`), `code-v2-exec-parallel` (`agent-tools=exec`), and
`tool-search-single` (gpt-5.5: the subagent tools loaded by a client `tool_search`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, RelationRecord
from roller.capture.reader import read_attempt, read_json_model
from roller.capture.tape import read_tape
from roller.export.trajectory import build_trajectory
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.attempt import finalize_attempt
from roller.finalize.pipeline import build_capture
from roller.harnesses.base import NativeCapture
from roller.harnesses.codex.native import read_native
from roller.harnesses.codex.trace import read_traces
from tests.harnesses.codex_data import DATA, copy, native, records, rollouts, root_and_children

SCRIPTED = {"code-v1-exec-single": 1, "code-v1-exec-parallel": 2, "code-v2-exec-parallel": 2}
CODE_MODE = ("code-v2-single", *SCRIPTED, "tool-search-single")


def _build(name: str, native_capture: NativeCapture | None = None) -> FinalizedCapture:
    inputs = read_json_model(DATA / name / "attempt.json", AttemptInputs)
    tape = read_tape(DATA / name / "tape")
    assert tape.problems == ()
    return build_capture(inputs, tape, native_capture or read_native(native(name)))


def _of(built: FinalizedCapture, kind: str) -> list[RelationRecord]:
    return [r for r in built.relations if r.type == kind]


@pytest.mark.parametrize("name", CODE_MODE)
def test_every_call_is_attributed_and_the_capture_complete(name: str) -> None:
    built = _build(name)
    assert built.manifest.capture_status == "complete", built.manifest.capture_errors
    assert all(c.identity_status == "attributed" for c in built.calls)
    assert all(r.status == "established" for r in built.relations)


@pytest.mark.parametrize(("name", "children"), SCRIPTED.items())
def test_a_scripted_spawn_names_its_exec_call_with_both_ids(name: str, children: int) -> None:
    built = _build(name)
    spawns = _of(built, "spawn")
    kids = {p.participant_id for p in built.manifest.participants if p.role == "child"}
    assert len(spawns) == children and {s.child_participant_id for s in spawns} == kids
    for spawn in spawns:
        ref = spawn.model_tool_ref
        assert ref is not None and ref.matched
        source = next(c for c in built.calls if c.call_id == spawn.source_call_id)
        assert source.output is not None
        (item,) = [i for i in source.output["output"] if i.get("type") == "custom_tool_call"]
        assert (item["name"], item["call_id"], item["id"]) == ("exec", ref.call_id, ref.item_id)
        assert "spawn_agent(" in item["input"]
        refs = [e.ref or "" for e in spawn.evidence]
        assert any(r.startswith("seq ") and "code_cell_started" in r for r in refs)
        assert any("tool_call_started exec-" in r for r in refs)
        assert any("item_completed exec-" in r for r in refs)
    # one script, several children: each launch acknowledged, each in a later context
    acks = _of(built, "launch_acknowledged")
    assert {a.child_participant_id for a in acks} == kids
    in_context = _of(built, "launch_ack_in_context")
    assert {r.child_participant_id for r in in_context} == kids


def test_a_v1_wait_inside_a_script_delivers_the_result() -> None:
    built = _build("code-v1-exec-single")
    (spawn,) = _of(built, "spawn")
    waits = [
        r for r in _of(built, "result_delivered") if r.note == "wait_agent inside an exec script"
    ]
    (wait,) = waits
    assert wait.child_participant_id == spawn.child_participant_id
    assert wait.target_call_id is not None and wait.tool_call_id != spawn.tool_call_id
    source = next(c for c in built.calls if c.call_id == wait.source_call_id)
    assert source.output is not None
    (item,) = [i for i in source.output["output"] if i.get("type") == "custom_tool_call"]
    assert wait.tool_call_id == f"{item['call_id']}|{item['id']}"
    assert "wait_agent(" in item["input"]


@pytest.mark.parametrize("name", SCRIPTED)
def test_the_trace_binds_every_nested_id_to_an_exec_call_of_its_thread(name: str) -> None:
    problems: list[object] = []
    trace = read_traces(native(name), problems)  # type: ignore[arg-type]
    assert problems == [] and trace.files
    for tid, path in rollouts(native(name)).items():
        execs = {
            r["payload"]["call_id"]
            for r in records(path)
            if r["type"] == "response_item" and r["payload"].get("type") == "custom_tool_call"
        }
        nested = [
            r["payload"]["item"]["id"]
            for r in records(path)
            if r["type"] == "event_msg"
            and r["payload"].get("type") == "item_completed"
            and str(r["payload"]["item"].get("id", "")).startswith("exec-")
        ]
        for key in nested:
            call = trace.nested[key]
            assert call.thread_id == tid and call.exec_call_id in execs


def test_without_a_trace_a_scripted_spawn_stays_unknown(tmp_path: Path) -> None:
    """An older capture, or one whose trace was lost: nothing binds the nested spawn to
    an exec call, and it is never bound by its position between the exec's records."""
    bare = copy("code-v1-exec-single", tmp_path)
    shutil.rmtree(bare / "rollout-trace")
    capture = read_native(bare)
    (spawn,) = [r for r in capture.relations if r.type == "spawn"]
    assert spawn.tool_call_id is not None and spawn.tool_call_id.startswith("exec-")
    assert spawn.model_tool_ref is None and "no rollout trace" in (spawn.note or "")
    built = _build("code-v1-exec-single", capture)
    (record,) = _of(built, "spawn")
    assert record.status == "unknown" and record.source_call_id is None
    assert built.manifest.capture_status == "partial"
    assert "relations_unknown" in {e.code for e in built.manifest.capture_errors}


def _edit_trace(native_dir: Path, edit: object) -> Path:
    (path,) = sorted((native_dir / "rollout-trace").glob("*/trace.jsonl"))
    lines = [json.loads(x) for x in path.read_text().splitlines() if x]
    path.write_text("".join(json.dumps(x) + "\n" for x in edit(lines)))  # type: ignore[operator]
    return path


def test_a_trace_putting_the_call_in_another_thread_is_a_problem(tmp_path: Path) -> None:
    bare = copy("code-v1-exec-single", tmp_path)
    _, children = root_and_children(bare)

    def move(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        for line in lines:
            payload = line["payload"]
            assert isinstance(payload, dict)
            if payload.get("type") == "tool_call_started" and payload.get("kind") == {
                "type": "spawn_agent"
            }:
                line["thread_id"] = children[0]
        return lines

    _edit_trace(bare, move)
    capture = read_native(bare)
    assert "foreign_record" in {p.code for p in capture.problems}
    (spawn,) = [r for r in capture.relations if r.type == "spawn"]
    assert spawn.model_tool_ref is None  # not bound: unknown after finalize


def test_an_unreadable_trace_line_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    bare = copy("code-v1-exec-single", tmp_path)
    path = _edit_trace(bare, lambda lines: lines)
    path.write_text(path.read_text() + "{not json\n")
    capture = read_native(bare)
    assert [p.code for p in capture.problems] == ["not_json"]
    assert [r.type for r in capture.relations if r.type == "spawn"] == ["spawn"]


def _trajectory_of(name: str, tmp: Path):  # type: ignore[no-untyped-def]
    paths = AttemptPaths(tmp / "attempt-0001")
    paths.tape.mkdir(parents=True)
    shutil.copyfile(DATA / name / "attempt.json", paths.attempt_inputs)
    for seg in sorted((DATA / name / "tape").iterdir()):
        shutil.copyfile(seg, paths.tape / seg.name)
    shutil.copytree(native(name), paths.native)
    finalize_attempt(paths)
    capture = read_attempt(paths)
    return capture, build_trajectory(capture)


def test_code_mode_bars_the_main_trajectory_and_snapshots_the_tool_item(tmp_path: Path) -> None:
    capture, record = _trajectory_of("code-v2-single", tmp_path)
    notes = capture.manifest.capabilities.notes
    assert any("dynamic_tools_loaded" in n and "additional_tools" in n for n in notes)
    assert (record.export_status, record.export_blocked_by) == ("blocked", ["dynamic_tools"])
    assert any("`additional_tools`" in p.message for p in record.problems)
    (segment,) = record.segments
    (snapshot,) = segment.tool_snapshots
    root_first = next(c for c in capture.calls if c.call_id == snapshot.call_ids[0])
    assert snapshot.tools == root_first.context["input"][0]["tools"]  # the item's, as sent
    root_ids = next(p for p in capture.manifest.participants if p.role == "root").call_ids
    assert all(c.export_status == "exportable" for c in capture.calls if c.call_id in root_ids)


def test_tools_loaded_by_tool_search_join_the_snapshot(tmp_path: Path) -> None:
    """A real `tool_search_output` (offline: gpt-5.5 defers its subagent tools behind a
    client tool search): the loaded definitions are in the call's context and in the
    trajectory's tool snapshot; the trajectory is barred, per-call export is not."""
    capture, record = _trajectory_of("tool-search-single", tmp_path)
    assert any("tool_search" in n for n in capture.manifest.capabilities.notes)
    assert record.export_blocked_by == ["dynamic_tools"]
    (segment,) = record.segments
    first, later = segment.tool_snapshots  # before and after the search
    names = [t.get("name") or t.get("type") for t in later.tools]
    assert "multi_agent_v1" not in [t.get("name") for t in first.tools]
    assert names[-1] == "multi_agent_v1" and names[:-1] == [
        t.get("name") or t.get("type") for t in first.tools
    ]
    loaded = next(
        i
        for c in capture.calls
        for i in c.context["input"]
        if isinstance(i, dict) and i.get("type") == "tool_search_output"
    )
    assert later.tools[-1] == loaded["tools"][0]
    assert all(c.export_status == "exportable" for c in capture.calls)
    (spawn,) = [r for r in capture.relations if r.type == "spawn"]
    assert spawn.status == "established"

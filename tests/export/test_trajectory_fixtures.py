"""The main trajectory over real recordings: the checked-in Claude Code 2.1.332 and
OpenCode 1.18.33 runs (tape + native logs, finalized here), and copies of them changed in
one place to show what splits, blocks or withholds a trajectory."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture, read_attempt
from roller.capture.trajectory_record import TrajectoryRecord, TrajectorySegment
from roller.export.trajectory import build_trajectory
from roller.finalize.attempt import finalize_attempt
from tests.harnesses import claude_code_fixtures, opencode_fixtures


def _finalized(make: Callable[[str, Path], Any], name: str, tmp: Path) -> Capture:
    paths = make(name, tmp)
    finalize_attempt(paths)
    return read_attempt(paths)


@pytest.fixture(scope="module")
def cc_parallel(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _finalized(claude_code_fixtures.attempt_dir, "parallel", tmp_path_factory.mktemp("cc"))


@pytest.fixture(scope="module")
def cc_midturn(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _finalized(
        claude_code_fixtures.attempt_dir, "midturn-notification", tmp_path_factory.mktemp("cc")
    )


@pytest.fixture(scope="module")
def oc_parallel(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return _finalized(opencode_fixtures.attempt_dir, "parallel", tmp_path_factory.mktemp("oc"))


def _root(capture: Capture) -> ParticipantRecord:
    (root,) = [p for p in capture.manifest.participants if p.role == "root"]
    return root


def _calls(capture: Capture) -> dict[str, CallRecord]:
    return {c.call_id: c for c in capture.calls}


def _only_segment(record: TrajectoryRecord) -> TrajectorySegment:
    (segment,) = record.segments
    return segment


def _assert_root_only(capture: Capture, record: TrajectoryRecord) -> None:
    """No item, request or configuration of the trajectory comes from a subtask."""
    root = _root(capture)
    calls = _calls(capture)
    child_calls = [c for c in capture.calls if c.participant_id != root.participant_id]
    assert child_calls, "the fixture has subtask calls"
    child_items = [
        json.dumps(item, sort_keys=True)
        for c in child_calls
        for item in c.context.get("messages", [])
        if not (isinstance(item, dict) and item.get("role") == "system")  # shared env prompt
    ]
    for segment in record.segments:
        assert {r.call_id for r in segment.requests} <= set(root.call_ids)
        for m in segment.messages:
            assert calls[m.call_id].participant_id == root.participant_id
            if m.source == "input":
                assert json.dumps(m.message, sort_keys=True) not in child_items
        for c in child_calls:
            assert c.output not in [m.message for m in segment.messages if m.source == "output"]
            # A child's tool and system configuration is its own, never the root's.
            assert c.context.get("tools") not in [t.tools for t in segment.tool_snapshots]
            if "system" in c.context:
                assert c.context["system"] not in [config["system"] for config in segment.configs]


def test_claude_code_background_notification_stays_injected_user_input(
    cc_parallel: Capture,
) -> None:
    record = build_trajectory(cc_parallel)
    assert (record.built, record.export_status, record.export_blocked_by) == (
        True,
        "exportable",
        [],
    )
    root = _root(cc_parallel)
    calls = _calls(cc_parallel)
    segment = _only_segment(record)
    assert [r.call_id for r in segment.requests] == record.call_ids == root.call_ids
    last = calls[root.call_ids[-1]]

    (note,) = [m for m in segment.messages if m.injected]
    # Verbatim: the user item exactly as the last request carried it, wrapper included.
    assert (note.source, note.call_id) == ("input", last.call_id)
    assert note.message == last.context["messages"][note.position]
    assert note.message["role"] == "user"
    for part in note.message["content"]:
        assert part["text"].startswith("<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]")
    delivered = {
        r.tool_call_id: r.relation_id
        for r in cc_parallel.relations
        if r.type == "result_delivered" and r.target_call_id == last.call_id
    }
    assert len(delivered) == 2
    assert sorted((i.kind, i.part, i.names, tuple(i.relation_ids)) for i in note.injections) == (
        sorted(
            ("task_notification", n, tool_id, (delivered[tool_id],))
            for n, tool_id in enumerate(
                t.split("<tool-use-id>")[1].split("</tool-use-id>")[0]
                for t in (p["text"] for p in note.message["content"])
            )
        )
    )
    assert {i.wrapper for i in note.injections} == {"<system-reminder>"}

    # The person's prompt is not injected; the reminder Claude Code put beside it is.
    first = segment.messages[0]
    assert "Do the task." in json.dumps(first.message)
    assert not first.injected
    assert [(i.kind, i.part) for i in first.injections] == [("system_reminder", 0)]

    # It ends with the last call's output, as the protocol's history item.
    assert segment.messages[-1].source == "output"
    assert segment.messages[-1].call_id == last.call_id
    assert segment.messages[-1].message == {"role": "assistant", "content": last.output["content"]}
    assert (
        len(segment.configs),
        len(segment.tool_snapshots),
        segment.tool_snapshots[0].tools,
    ) == (1, 1, calls[root.call_ids[0]].context["tools"])


def test_claude_code_children_are_absent(cc_parallel: Capture) -> None:
    _assert_root_only(cc_parallel, build_trajectory(cc_parallel))


def test_prefix_check_tolerates_claude_codes_reserialization(cc_parallel: Capture) -> None:
    """Between the first two root calls Claude Code re-sends its `system` message as a
    string instead of a cache-marked text block, and moves cache_control to another tool
    result: the same messages, so the second call adds only its tool results."""
    root_ids = _root(cc_parallel).call_ids
    calls = _calls(cc_parallel)
    before = calls[root_ids[0]].context["messages"][1]
    after = calls[root_ids[1]].context["messages"][1]
    assert isinstance(before["content"], list) and "cache_control" in before["content"][0]
    assert after["content"] == before["content"][0]["text"]
    segment = _only_segment(build_trajectory(cc_parallel))
    added = [m.position for m in segment.messages if m.call_id == root_ids[1]]
    assert added == [3, 0]  # input item 3 (the tool results), then output item 0


def test_claude_code_midturn_notification_is_an_injected_system_item(cc_midturn: Capture) -> None:
    record = build_trajectory(cc_midturn)
    assert record.export_status == "exportable"
    segment = _only_segment(record)
    (note,) = [m for m in segment.messages if m.injected]
    assert note.message["role"] == "system"  # how 2.1.332 delivers it mid-turn
    assert note.message == _calls(cc_midturn)[note.call_id].context["messages"][note.position]
    (injection,) = note.injections
    (delivered,) = [r for r in cc_midturn.relations if r.type == "result_delivered"]
    assert delivered.target_call_id == note.call_id
    assert (injection.kind, injection.wrapper, injection.names, injection.relation_ids) == (
        "task_notification",
        "[SYSTEM NOTIFICATION - NOT USER INPUT]",
        delivered.tool_call_id,
        [delivered.relation_id],
    )
    # The notification came while the root waited for its shell command: it follows
    # that command's tool result in the same call's input.
    previous = segment.messages[segment.messages.index(note) - 1]
    assert (previous.call_id, previous.message["content"][0]["type"]) == (
        note.call_id,
        "tool_result",
    )
    _assert_root_only(cc_midturn, record)


def test_opencode_parallel_children_absent_results_as_the_root_saw_them(
    oc_parallel: Capture,
) -> None:
    record = build_trajectory(oc_parallel)
    assert record.export_status == "exportable"
    _assert_root_only(oc_parallel, record)
    calls = _calls(oc_parallel)
    title, main = record.segments
    # The title request is the root's own side conversation: a segment of its own.
    assert title.start.reason == "first_call"
    assert "title" in json.dumps(title.messages[0].message)
    assert (main.start.reason, main.start.previous_segment) == ("not_a_continuation", 0)
    assert main.start.detail is not None and main.start.detail.startswith("input item 0")
    last = calls[main.requests[-1].call_id]
    results = [m for m in main.messages if m.source == "input" and m.message["role"] == "tool"]
    assert [m.message for m in results] == [
        item for item in last.context["messages"] if item["role"] == "tool"
    ]
    assert len(results) == 2
    assert all("<task_result>" in m.message["content"] for m in results)
    assert not any(m.injected or m.injections for m in main.messages)
    assert main.messages[-1].message == last.output["choices"][0]["message"]


# --- the same recordings, changed in one place ------------------------------------------


def _changed(capture: Capture, call_id: str, edit: Callable[[dict[str, Any]], None]) -> Capture:
    """A copy of the capture whose call `call_id` has its request body edited."""

    def edited(call: CallRecord) -> CallRecord:
        context = copy.deepcopy(call.context)
        edit(context)
        return call.model_copy(update={"context": context})

    calls = [edited(c) if c.call_id == call_id else c for c in capture.calls]
    return replace(capture, calls=calls)


def test_rewritten_history_starts_a_new_segment_never_stitched(cc_parallel: Capture) -> None:
    root_ids = _root(cc_parallel).call_ids

    def rewrite(context: dict[str, Any]) -> None:
        context["messages"][2]["content"][0]["input"]["prompt"] = "something else"

    record = build_trajectory(_changed(cc_parallel, root_ids[-1], rewrite))
    first, second = record.segments
    assert [r.call_id for r in first.requests] == root_ids[:2]
    assert [r.call_id for r in second.requests] == root_ids[2:]
    assert (second.start.reason, second.start.previous_segment) == ("not_a_continuation", 0)
    assert second.start.detail is not None
    assert second.start.detail.startswith("input item 2 (assistant message) differs")
    # The new segment carries the whole rewritten input from its first item.
    assert [m.position for m in second.messages if m.source == "input"] == list(range(6))
    assert record.export_status == "exportable"


def test_a_changed_system_prompt_starts_a_new_segment(cc_parallel: Capture) -> None:
    root_ids = _root(cc_parallel).call_ids

    def edit(context: dict[str, Any]) -> None:
        context["system"][1]["text"] += " Changed."

    record = build_trajectory(_changed(cc_parallel, root_ids[-1], edit))
    assert [s.start.reason for s in record.segments] == ["first_call", "system_changed"]


def test_tools_changing_between_root_calls_block_the_trajectory(cc_parallel: Capture) -> None:
    root_ids = _root(cc_parallel).call_ids
    loaded = {"name": "WebFetch", "description": "Fetch.", "input_schema": {"type": "object"}}

    def load(context: dict[str, Any]) -> None:
        context["tools"].append(loaded)

    record = build_trajectory(_changed(cc_parallel, root_ids[-1], load))
    assert (record.export_status, record.export_blocked_by) == ("blocked", ["dynamic_tools"])
    (problem,) = record.problems
    assert problem.call_id == root_ids[-1]
    segment = _only_segment(record)
    first, second = segment.tool_snapshots
    assert first.call_ids == root_ids[:2] and second.call_ids == root_ids[2:]
    assert second.tools[-1] == loaded
    assert [r.tools for r in segment.requests] == [0, 0, 1]
    # Per-call export is not affected.
    assert all(c.export_status == "exportable" for c in cc_parallel.calls if c.call_id in root_ids)


def test_a_tool_reference_in_the_history_blocks_the_trajectory(cc_parallel: Capture) -> None:
    root_ids = _root(cc_parallel).call_ids

    def reference(context: dict[str, Any]) -> None:
        result = context["messages"][3]["content"][0]
        result["content"].append({"type": "tool_reference", "tool_name": "WebFetch"})

    record = build_trajectory(_changed(cc_parallel, root_ids[1], reference))
    assert record.export_blocked_by == ["dynamic_tools"]
    assert "tool_reference" in record.problems[0].message


def test_an_adapter_bar_blocks_the_trajectory(cc_parallel: Capture) -> None:
    m = cc_parallel.manifest
    note = "main_trajectory_export_blocked: dynamic_tools_loaded: tool_search_output in root"
    capabilities = m.capabilities.model_copy(update={"notes": [*m.capabilities.notes, note]})
    capture = replace(cc_parallel, manifest=m.model_copy(update={"capabilities": capabilities}))
    assert build_trajectory(capture).export_blocked_by == ["dynamic_tools"]


def test_a_blocked_root_call_blocks_the_trajectory(cc_parallel: Capture) -> None:
    target = _root(cc_parallel).call_ids[1]
    calls = [
        c.model_copy(update={"export_status": "blocked", "export_blocked_by": ["model_mismatch"]})
        if c.call_id == target
        else c
        for c in cc_parallel.calls
    ]
    record = build_trajectory(replace(cc_parallel, calls=calls))
    assert record.built and len(record.segments) == 1
    assert record.export_blocked_by == ["root_call_blocked"]
    (problem,) = record.problems
    assert problem.call_id == target and "model_mismatch" in problem.message


def test_an_incomplete_output_is_not_history(cc_parallel: Capture) -> None:
    """A cut-off response never became history: the next call's input is compared without
    it, and whatever of it the next input does carry is that input's own item."""
    root_ids = _root(cc_parallel).call_ids
    calls = [
        c.model_copy(
            update={
                "output_complete": False,
                "export_status": "blocked",
                "export_blocked_by": ["output_incomplete"],
            }
        )
        if c.call_id == root_ids[1]
        else c
        for c in cc_parallel.calls
    ]
    record = build_trajectory(replace(cc_parallel, calls=calls))
    segment = _only_segment(record)
    assert [(m.source, m.position) for m in segment.messages if m.call_id == root_ids[1]] == [
        ("input", 3)
    ]
    carried = next(m for m in segment.messages if m.call_id == root_ids[2])
    assert (carried.source, carried.position, carried.message["role"]) == (
        "input",
        4,
        "assistant",
    )
    assert record.export_blocked_by == ["root_call_blocked"]


def test_an_unattributed_call_withholds_the_trajectory(cc_parallel: Capture) -> None:
    """The call may be a root turn: a trajectory without it would be stitched over a gap."""
    target = _root(cc_parallel).call_ids[1]
    calls = [
        c.model_copy(update={"participant_id": None, "identity_status": "unattributed"})
        if c.call_id == target
        else c
        for c in cc_parallel.calls
    ]
    record = build_trajectory(replace(cc_parallel, calls=calls))
    assert (record.built, record.segments, record.export_blocked_by) == (
        False,
        [],
        ["unattributed_calls"],
    )
    assert [p.call_id for p in record.problems] == [target]


def test_a_capture_without_a_root_has_no_trajectory(cc_parallel: Capture) -> None:
    m = cc_parallel.manifest
    participants = [p.model_copy(update={"role": "child"}) for p in m.participants]
    capture = replace(cc_parallel, manifest=m.model_copy(update={"participants": participants}))
    record = build_trajectory(capture)
    assert (record.built, record.root_participant_id, record.export_blocked_by) == (
        False,
        None,
        ["root_unknown"],
    )

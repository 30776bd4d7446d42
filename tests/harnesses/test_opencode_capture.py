"""Finalize over real OpenCode 1.18.33 recordings: the proxy's tape and the store of one
run, as collected. Every call must land on the session its own headers name, every
relation must bind to the calls that carry its tool id, and a store that disagrees with
the tape must give a partial capture, never a quiet one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.reader import Capture, read_attempt
from roller.finalize.attempt import finalize_attempt

from .opencode_fixtures import attempt_dir, sql


def _finalize(paths: AttemptPaths) -> Capture:
    finalize_attempt(paths)
    report = validate_attempt(paths)
    assert report.ok, report.problems
    return read_attempt(paths)


def _header(call: CallRecord, name: str) -> str | None:
    return next((v for k, v in call.request.headers if k.lower() == name), None)


def _tools(call: CallRecord) -> set[str]:
    assert isinstance(call.context, dict)
    return {t["function"]["name"] for t in call.context.get("tools") or []}


def _check_owners(capture: Capture) -> None:
    """Each call's participant is the session its x-session-id names; a child's
    x-parent-session-id names its parent participant's session."""
    parts = {p.participant_id: p for p in capture.manifest.participants}
    for call in capture.calls:
        owner = parts[str(call.participant_id)]
        assert owner.native_ids["session_id"] == _header(call, "x-session-id")
        parent_header = _header(call, "x-parent-session-id")
        if owner.role == "child":
            parent = parts[str(owner.parent_participant_id)]
            assert parent.native_ids["session_id"] == parent_header
        else:
            assert parent_header is None


def test_single_capture_is_complete(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("single", tmp_path))
    m = capture.manifest
    assert m.lifecycle is not None
    assert (m.execution_status, m.capture_status, m.lifecycle.status) == (
        "completed",
        "complete",
        "complete",
    )
    assert m.capture_errors == []
    assert m.coverage.checked and m.coverage.ok
    assert m.coverage.expected == len(capture.calls) == 4
    assert all(c.identity_status == "attributed" for c in capture.calls)
    assert all(c.export_status == "exportable" for c in capture.calls)
    _check_owners(capture)
    root = next(p for p in m.participants if p.role == "root")
    child = next(p for p in m.participants if p.role == "child")
    assert len(root.call_ids) == 3 and len(child.call_ids) == 1
    # The title request: the root's headers, no tools, no message in the store.
    by_id = {c.call_id: c for c in capture.calls}
    titles = [by_id[i] for i in root.call_ids if not _tools(by_id[i])]
    assert len(titles) == 1
    assert "Generate a title" in json.dumps(titles[0].context)
    # The child is offered neither task nor todowrite (OpenCode's depth limit).
    assert "task" in _tools(by_id[root.call_ids[-1]])
    assert "task" not in _tools(by_id[child.call_ids[0]])
    kinds = Counter(r.type for r in capture.relations)
    assert all(r.status == "established" for r in capture.relations)
    assert kinds == {
        "spawn": 1,
        "result_delivered": 1,
        "child_completed": 1,
        "result_in_context": 1,
    }
    spawn = next(r for r in capture.relations if r.type == "spawn")
    assert spawn.source_call_id is not None
    emitted = by_id[spawn.source_call_id].tool_refs.emitted
    assert [t.id for t in emitted] == [spawn.tool_call_id]
    assert (spawn.parent_participant_id, spawn.child_participant_id) == (
        root.participant_id,
        child.participant_id,
    )
    in_context = next(r for r in capture.relations if r.type == "result_in_context")
    target = by_id[str(in_context.target_call_id)]
    assert target.participant_id == root.participant_id
    assert spawn.tool_call_id in {t.id for t in target.tool_refs.results}


def test_parallel_children_each_get_their_own_calls(tmp_path: Path) -> None:
    for name in ("parallel", "identical-prompts"):
        capture = _finalize(attempt_dir(name, tmp_path / name))
        m = capture.manifest
        assert m.capture_status == "complete" and m.coverage.ok
        assert len(capture.calls) == m.coverage.expected == 5
        _check_owners(capture)
        children = [p for p in m.participants if p.role == "child"]
        assert len(children) == 2 and all(len(p.call_ids) == 1 for p in children)
        spawns = [r for r in capture.relations if r.type == "spawn"]
        # One response emitted both task calls: both spawns bind to it, by tool id.
        assert len({r.source_call_id for r in spawns}) == 1
        assert {r.child_participant_id for r in spawns} == {p.participant_id for p in children}
        in_context = [r for r in capture.relations if r.type == "result_in_context"]
        assert {r.tool_call_id for r in in_context} == {r.tool_call_id for r in spawns}


def test_forced_grandchild_keeps_the_childs_refused_call(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("forced-grandchild", tmp_path))
    m = capture.manifest
    assert m.capture_status == "complete"
    assert [p.depth for p in m.participants] == [0, 1]
    child = next(p for p in m.participants if p.role == "child")
    by_id = {c.call_id: c for c in capture.calls}
    first, second = (by_id[i] for i in child.call_ids)
    assert [t.name for t in first.tool_refs.emitted] == ["task"]  # the forced call, as sent
    refused = first.tool_refs.emitted[0].id
    assert refused in {t.id for t in second.tool_refs.results}  # its refusal came back
    assert any("refused" in n for n in m.capabilities.notes)
    # The refused call's result entering the child's next call is recorded, with no child.
    (rel,) = [r for r in capture.relations if r.tool_call_id == refused]
    assert rel.type == "result_in_context" and rel.child_participant_id is None


def test_resumed_child_has_two_delegations(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("resume", tmp_path))
    m = capture.manifest
    assert m.capture_status == "complete" and m.coverage.ok
    (child,) = [p for p in m.participants if p.role == "child"]
    assert len(child.call_ids) == 2
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert len(spawns) == 2 and len({r.source_call_id for r in spawns}) == 2
    assert {r.child_participant_id for r in spawns} == {child.participant_id}
    by_id = {c.call_id: c for c in capture.calls}
    arguments = []
    for r in spawns:
        output = by_id[str(r.source_call_id)].output
        assert isinstance(output, dict)
        (tool_call,) = output["choices"][0]["message"]["tool_calls"]
        assert tool_call["id"] == r.tool_call_id
        arguments.append(json.loads(tool_call["function"]["arguments"]))
    # The first delegation creates the child; the second names it by task_id.
    assert "task_id" not in arguments[0]
    assert arguments[1]["task_id"] == child.native_ids["session_id"]
    completed = [r for r in capture.relations if r.type == "child_completed"]
    assert {r.tool_call_id for r in completed} == {r.tool_call_id for r in spawns}


def test_denied_task_is_not_offered(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("denied", tmp_path))
    m = capture.manifest
    assert m.capture_status == "complete" and len(m.participants) == 1
    assert capture.relations == []
    assert all("task" not in _tools(c) for c in capture.calls)
    assert any(_tools(c) for c in capture.calls)  # the agent still had its other tools


def test_killed_child_is_pending_and_partial(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("killed-child", tmp_path))
    m = capture.manifest
    assert m.execution_status == "interrupted" and m.lifecycle is not None
    assert m.lifecycle.status == "pending" and m.capture_status == "partial"
    child = next(p for p in m.participants if p.role == "child")
    assert child.participant_id in m.lifecycle.pending_participant_ids
    assert child.state == "running"
    assert not any(r.type == "child_completed" for r in capture.relations)
    assert m.raw_retained  # on-error retention keeps the evidence of an open run


def test_a_store_missing_the_title_gives_a_coverage_mismatch(tmp_path: Path) -> None:
    paths = attempt_dir("single", tmp_path)
    db = paths.native / "opencode.db"
    sql(
        db,
        "UPDATE session SET title = 'New session - 2026-11-29T20:14:28.771Z' "
        "WHERE parent_id IS NULL",
    )
    finalize_attempt(paths)
    capture = read_attempt(paths)
    m = capture.manifest
    assert m.capture_status == "partial" and not m.coverage.ok
    assert "coverage_mismatch" in {e.code for e in m.capture_errors}
    # The calls themselves are still attributed: coverage never rewrites attribution.
    assert all(c.identity_status == "attributed" for c in capture.calls)


def test_a_call_whose_session_is_not_in_the_store_is_unattributed(tmp_path: Path) -> None:
    paths = attempt_dir("single", tmp_path)
    db = paths.native / "opencode.db"
    ((child,),) = sql(db, "SELECT id FROM session WHERE parent_id IS NOT NULL")
    sql(db, "DELETE FROM part WHERE session_id = ?", child)
    sql(db, "DELETE FROM message WHERE session_id = ?", child)
    sql(db, "DELETE FROM session WHERE id = ?", child)
    finalize_attempt(paths)
    capture = read_attempt(paths)
    lost = [c for c in capture.calls if _header(c, "x-session-id") == child]
    assert len(lost) == 1 and lost[0].identity_status == "unattributed"
    assert lost[0].participant_id is None
    assert capture.manifest.capture_status == "partial"
    assert "unattributed_calls" in {e.code for e in capture.manifest.capture_errors}


def test_a_child_rejected_by_the_provider(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("child-api-error", tmp_path))
    m = capture.manifest
    _check_owners(capture)
    child = next(p for p in m.participants if p.role == "child")
    assert child.state == "failed"
    (failed,) = [c for c in capture.calls if c.participant_id == child.participant_id]
    assert failed.response.status == 400 and failed.execution_status == "failed"
    assert failed.identity_status == "attributed"  # failed, but still the child's call
    assert failed.export_status == "blocked"
    kinds = Counter(r.type for r in capture.relations)
    assert kinds == {"spawn": 1, "child_failed": 1, "result_in_context": 1}
    assert all(r.status == "established" for r in capture.relations)
    # A failed call makes the capture partial; the count check still holds.
    assert m.capture_status == "partial" and m.coverage.ok
    assert m.lifecycle is not None and m.lifecycle.status == "complete"
    assert m.raw_retained

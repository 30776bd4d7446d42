"""OpenCode's native facts (participants, relations, coverage, lifecycle) over real
1.18.33 stores, then over copies changed the way a failure would change them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from roller.harnesses.base import NativeCapture, NativeProblem, NativeRelation
from roller.harnesses.opencode import OpenCodeAdapter
from roller.harnesses.opencode.native import is_default_title, native_capture
from roller.harnesses.opencode.store import read_store

from .opencode_fixtures import data_of, native_copy, set_data, sql


def _read(name: str, tmp_path: Path) -> NativeCapture:
    native = OpenCodeAdapter().read_native(native_copy(name, tmp_path))
    assert native is not None
    return native


def _by_type(native: NativeCapture) -> Counter[str]:
    return Counter(r.type for r in native.relations)


def _one(native: NativeCapture, kind: str) -> NativeRelation:
    (rel,) = [r for r in native.relations if r.type == kind]
    return rel


def test_single(tmp_path: Path) -> None:
    native = _read("single", tmp_path)
    assert native.problems == ()
    root, child = native.participants  # roots first
    assert (root.role, root.depth, root.parent_key, root.name) == ("root", 0, None, "build")
    assert (child.role, child.depth, child.parent_key, child.name) == (
        "child",
        1,
        root.key,
        "general",
    )
    assert root.state == child.state == "completed"
    assert dict(child.native_ids) == {"session_id": child.key, "parent_session_id": root.key}
    # Identity: a call joins the session its x-session-id names, and nothing else.
    assert native.identity.basis == "wire_participant"
    assert dict(native.identity.keys) == {root.key: (root.key,), child.key: (child.key,)}
    assert _by_type(native) == {"spawn": 1, "result_delivered": 1, "child_completed": 1}
    spawn = _one(native, "spawn")
    assert (spawn.parent_key, spawn.child_key) == (root.key, child.key)
    assert spawn.tool_call_id is not None and spawn.tool_call_id.startswith("call_")
    assert all(r.tool_call_id == spawn.tool_call_id for r in native.relations)
    assert spawn.source_response_id is None  # OpenCode stores no provider response id
    assert {e.path for r in native.relations for e in r.evidence} == {"opencode.db"}
    # Two assistant turns and the title request for the root; one turn for the child.
    assert native.coverage.basis == "per_session_assistant_count"
    assert dict(native.coverage.counts) == {root.key: 3, child.key: 1}
    assert any("title generation" in n and root.key in n for n in native.coverage.notes)
    assert (native.lifecycle.status, native.lifecycle.pending_keys) == ("complete", ())
    assert native.subtasks == "supported"


def test_parallel_children_are_told_apart_by_their_own_sessions(tmp_path: Path) -> None:
    for name in ("parallel", "identical-prompts"):
        native = _read(name, tmp_path / name)
        root, *children = native.participants
        assert len(children) == 2 and {c.parent_key for c in children} == {root.key}
        spawns = [r for r in native.relations if r.type == "spawn"]
        assert {r.child_key for r in spawns} == {c.key for c in children}
        assert len({r.tool_call_id for r in spawns}) == 2
        assert _by_type(native) == {"spawn": 2, "result_delivered": 2, "child_completed": 2}
        assert [native.coverage.counts[c.key] for c in children] == [1, 1]
        assert native.coverage.counts[root.key] == 3
        assert native.lifecycle.status == "complete"


def test_identical_prompts_stay_two_children(tmp_path: Path) -> None:
    native_dir = native_copy("identical-prompts", tmp_path)
    store = read_store(native_dir / "opencode.db")
    tasks = [p for p in store.parts if p.tool == "task"]
    assert len(tasks) == 2 and tasks[0].input == tasks[1].input  # the very same request
    assert tasks[0].metadata["sessionId"] != tasks[1].metadata["sessionId"]


def test_a_forced_grandchild_is_refused_and_not_invented(tmp_path: Path) -> None:
    native = _read("forced-grandchild", tmp_path)
    _, child = native.participants
    assert [p.depth for p in native.participants] == [0, 1]
    assert _by_type(native) == {"spawn": 1, "result_delivered": 1, "child_completed": 1}
    # The child's turn with the refused call and its reply: both are its own outputs.
    assert native.coverage.counts[child.key] == 2
    (refusal,) = [n for n in native.coverage.notes if "refused" in n]
    assert child.key in refusal and "invalid" in refusal
    assert child.state == "completed" and native.lifecycle.status == "complete"


def test_a_resumed_child_is_judged_by_each_delegation(tmp_path: Path) -> None:
    native = _read("resume", tmp_path)
    root, child = native.participants
    spawns = [r for r in native.relations if r.type == "spawn"]
    completed = [r for r in native.relations if r.type == "child_completed"]
    assert [r.child_key for r in spawns] == [child.key, child.key]
    assert len({r.tool_call_id for r in spawns}) == 2
    assert {r.tool_call_id for r in completed} == {r.tool_call_id for r in spawns}
    # Each delegation's evidence is its own task part.
    parts = {r.tool_call_id: r.evidence[0].ref for r in completed}
    assert len(set(parts.values())) == 2
    assert dict(native.coverage.counts) == {root.key: 4, child.key: 2}


def test_a_denied_task_tool_leaves_one_root(tmp_path: Path) -> None:
    native = _read("denied", tmp_path)
    (root,) = native.participants
    assert native.relations == ()
    assert native.coverage.counts[root.key] == 2  # the reply and the title
    assert native.lifecycle.status == "complete"


def test_a_child_stopped_mid_run_is_pending(tmp_path: Path) -> None:
    native = _read("killed-child", tmp_path)
    root, child = native.participants
    assert child.state == "running" and root.state == "running"
    assert native.lifecycle.status == "pending"
    assert set(native.lifecycle.pending_keys) == {root.key, child.key}
    assert _by_type(native) == {"spawn": 1}  # no completion was recorded
    assert native.problems == ()


def test_a_background_task_is_unknown_never_complete(tmp_path: Path) -> None:
    native = _read("background", tmp_path)
    assert native.lifecycle.status == "unknown"
    (problem,) = [p for p in native.problems if p.code == "unsupported"]
    assert problem.message.startswith("background task(s) ses_")
    assert _by_type(native)["child_completed"] == 0


def test_a_failed_task_is_child_failed(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((part_id,),) = sql(db, "SELECT id FROM part WHERE json_extract(data, '$.tool') = 'task'")
    data = data_of(db, "part", part_id)
    state = data["state"]
    data["state"] = {
        "status": "error",
        "input": state["input"],
        "error": "Subagent failed (task_id: x): boom",
        "metadata": state["metadata"],
        "time": state["time"],
    }
    set_data(db, "part", part_id, data)
    native = native_capture(read_store(db))
    assert _by_type(native) == {"spawn": 1, "child_failed": 1}
    assert _one(native, "child_failed").note == "Subagent failed (task_id: x): boom"
    assert native.lifecycle.status == "complete"  # it ended; failing is an end


def test_a_child_whose_last_message_failed_is_failed(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((child,),) = sql(db, "SELECT id FROM session WHERE parent_id IS NOT NULL")
    ((mid,),) = sql(
        db,
        "SELECT id FROM message WHERE session_id = ? AND json_extract(data, '$.role') = "
        "'assistant'",
        child,
    )
    data = data_of(db, "message", mid)
    data["error"] = {"name": "APIError", "data": {"message": "503"}}
    set_data(db, "message", mid, data)
    native = native_capture(read_store(db))
    (participant,) = [p for p in native.participants if p.key == child]
    assert participant.state == "failed"
    assert native.coverage.counts[child] == 0  # a failed response is not an output


def test_an_unfinished_task_part_keeps_its_child_pending(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((part_id,),) = sql(db, "SELECT id FROM part WHERE json_extract(data, '$.tool') = 'task'")
    data = data_of(db, "part", part_id)
    data["state"]["status"] = "running"
    set_data(db, "part", part_id, data)
    native = native_capture(read_store(db))
    assert native.lifecycle.status == "pending"
    child = next(p.key for p in native.participants if p.role == "child")
    root = next(p.key for p in native.participants if p.role == "root")
    assert set(native.lifecycle.pending_keys) == {child, root}


def test_a_task_output_naming_another_child_is_a_problem(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((part_id,),) = sql(db, "SELECT id FROM part WHERE json_extract(data, '$.tool') = 'task'")
    data = data_of(db, "part", part_id)
    data["state"]["output"] = '<task id="ses_someoneelse" state="completed">\n</task>'
    set_data(db, "part", part_id, data)
    native = native_capture(read_store(db))
    assert "child_completed" not in _by_type(native)
    (problem,) = native.problems
    assert problem.code == "disagreement" and "does not report child" in problem.message
    assert native.lifecycle.status == "pending"


def test_a_child_under_the_wrong_parent_is_a_problem(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    sql(db, "UPDATE session SET parent_id = 'ses_elsewhere' WHERE parent_id IS NOT NULL")
    native = native_capture(read_store(db))
    codes = {p.code: p.message for p in native.problems}
    assert "whose parent is ses_elsewhere" in codes["disagreement"]
    assert codes["unknown_reference"].endswith("names parent ses_elsewhere, which has no row")


def test_the_title_counts_only_when_the_store_shows_it(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((root,),) = sql(db, "SELECT id FROM session WHERE parent_id IS NULL")
    sql(
        db,
        "UPDATE session SET title = ? WHERE id = ?",
        "New session - 2026-11-29T20:14:28.771Z",
        root,
    )
    native = native_capture(read_store(db))
    assert native.coverage.counts[root] == 2
    assert not any("title" in n for n in native.coverage.notes)


def test_default_titles() -> None:
    assert is_default_title("New session - 2026-11-29T20:14:28.771Z")
    assert is_default_title("Child session - 2026-11-29T20:14:28.771Z")
    assert not is_default_title("Roller mock session")
    assert not is_default_title("New session - yesterday")


def test_an_unreadable_store_is_unknown(tmp_path: Path) -> None:
    native = OpenCodeAdapter().read_native(tmp_path)
    assert native is not None
    assert native.participants == () and native.lifecycle.status == "unknown"
    assert native.problems == (
        NativeProblem("missing_file", "opencode.db was not found (the harness wrote no store)"),
    )


def test_a_child_rejected_by_the_provider_failed(tmp_path: Path) -> None:
    native = _read("child-api-error", tmp_path)
    root, child = native.participants
    assert child.state == "failed" and root.state == "completed"
    assert _by_type(native) == {"spawn": 1, "child_failed": 1}
    note = _one(native, "child_failed").note
    assert note is not None and note.startswith(f"Subagent failed (task_id: {child.key})")
    assert "roller test: child request refused" in note
    # The failed response is no output: the child has none, the root its two and a title.
    assert dict(native.coverage.counts) == {root.key: 3, child.key: 0}
    assert native.lifecycle.status == "complete"

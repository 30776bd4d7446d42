"""The Codex native reader over real rollouts (codex-cli 0.171.0) and hostile copies of them.

Every expected value is read from the checked-in files themselves (thread ids from
`session_meta`, tool ids from `function_call`, response ids from `token_usage_record`),
so the tests say what the reader must find, not what it happened to return once.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from roller.errors import HarnessError
from roller.harnesses.base import NativeCapture, NativeProblem, NativeRelation
from roller.harnesses.codex import confirmed_root_thread
from roller.harnesses.codex.native import read_native
from tests.harnesses.codex_data import (
    copy,
    items,
    native,
    records,
    rewrite,
    rollouts,
    root_and_children,
)


def _relations(capture: NativeCapture, kind: str) -> list[NativeRelation]:
    return [r for r in capture.relations if r.type == kind]


def _response_ids(path: Path) -> list[str]:
    return [r["payload"]["response_id"] for r in items(path, "token_usage_record")]


# --- real runs -----------------------------------------------------------------------


def test_v1_single_participants_come_from_session_meta_and_spawn_edges() -> None:
    capture = read_native(native("v1-single"))
    root, (child,) = root_and_children(native("v1-single"))
    assert capture.problems == ()
    by_key = {p.key: p for p in capture.participants}
    assert set(by_key) == {root, child}
    assert (by_key[root].role, by_key[root].parent_key, by_key[root].depth) == ("root", None, 0)
    assert (by_key[child].role, by_key[child].parent_key, by_key[child].depth) == (
        "child",
        root,
        1,
    )
    assert by_key[root].state == by_key[child].state == "completed"
    assert by_key[child].native_ids["session_id"] == root  # the root thread is the session
    assert by_key[child].native_ids["spawn_edge_status"] == "open"
    # a call joins by its thread-id header: exactly the native thread ids
    assert capture.identity.basis == "wire_participant"
    assert dict(capture.identity.keys) == {root: (root,), child: (child,)}
    assert capture.subtasks == "supported"
    assert capture.lifecycle.status == "complete"


def test_v1_spawn_keeps_call_id_and_item_id_of_the_native_function_call() -> None:
    capture = read_native(native("v1-single"))
    root, (child,) = root_and_children(native("v1-single"))
    (call,) = [
        r["payload"]
        for r in items(rollouts(native("v1-single"))[root], "response_item", "function_call")
        if r["payload"]["name"] == "spawn_agent"
    ]
    assert call["namespace"] == "multi_agent_v1"
    (spawn,) = _relations(capture, "spawn")
    assert (spawn.parent_key, spawn.child_key) == (root, child)
    assert spawn.model_tool_ref == (call["call_id"], call["id"])
    assert spawn.tool_call_id == f"{call['call_id']}|{call['id']}"
    assert any(e.ref and "thread_spawn_edges" in e.ref for e in spawn.evidence)
    (ack,) = _relations(capture, "launch_acknowledged")
    assert ack.model_tool_ref == spawn.model_tool_ref
    (done,) = _relations(capture, "child_completed")
    assert (done.child_key, done.tool_call_id) == (child, spawn.tool_call_id)


def test_v1_results_are_bound_to_the_response_that_sampled_them() -> None:
    """wait_agent's output and the subagent notification both entered the root's last
    request: its response id is the token_usage_record after them."""
    capture = read_native(native("v1-single"))
    root, (child,) = root_and_children(native("v1-single"))
    path = rollouts(native("v1-single"))[root]
    last_response = _response_ids(path)[-1]
    (wait,) = [
        r["payload"]
        for r in items(path, "response_item", "function_call")
        if r["payload"]["name"] == "wait_agent"
    ]
    (wait_output,) = [
        r["payload"]["output"]
        for r in items(path, "response_item", "function_call_output")
        if r["payload"]["call_id"] == wait["call_id"]
    ]
    delivered = {r.note: r for r in _relations(capture, "result_delivered")}
    assert set(delivered) == {"wait_agent output", "subagent_notification"}
    by_wait = delivered["wait_agent output"]
    assert by_wait.model_tool_ref == (wait["call_id"], wait["id"])
    assert by_wait.delivered_text == wait_output and child in wait_output
    by_note = delivered["subagent_notification"]
    assert by_note.delivered_text is not None
    assert by_note.delivered_text.startswith("<subagent_notification>")
    for rel in delivered.values():
        assert (rel.parent_key, rel.child_key) == (root, child)
        assert rel.target_response_id == last_response


def test_coverage_counts_token_usage_records_per_thread_and_lists_their_ids() -> None:
    capture = read_native(native("v1-single"))
    files = rollouts(native("v1-single"))
    cov = capture.coverage
    assert cov.basis == "token_usage_count"
    for tid, path in files.items():
        ids = _response_ids(path)
        assert cov.counts[tid] == len(ids) > 0
        assert cov.ids[tid] == frozenset(ids)
    assert "weaker than a per-id check" in cov.notes[0]
    assert len(cov.notes) == 1  # token_count events agree with the records


def test_v2_warm_fork_inherited_parent_history_is_not_the_childs() -> None:
    capture = read_native(native("v2-fork"))
    root, (child,) = root_and_children(native("v2-fork"))
    child_file = rollouts(native("v2-fork"))[child]
    meta = records(child_file)[0]["payload"]
    start = meta["subagent_history_start_ordinal"]
    assert meta["forked_from_id"] == root
    # the child's file really does carry the parent's spawn call and usage-less history
    copied = [
        r for r in items(child_file, "response_item", "function_call") if r["ordinal"] < start
    ]
    assert [r["payload"]["name"] for r in copied] == ["spawn_agent"]
    assert capture.problems == ()
    (spawn,) = _relations(capture, "spawn")  # the copy yields no second spawn
    assert (spawn.parent_key, spawn.child_key) == (root, child)
    assert spawn.model_tool_ref == (copied[0]["payload"]["call_id"], copied[0]["payload"]["id"])
    # the child's outputs are its own responses only; the parent's stay the parent's
    assert capture.coverage.ids[child] == frozenset(_response_ids(child_file))
    assert capture.coverage.counts[root] == len(_response_ids(rollouts(native("v2-fork"))[root]))
    # its state comes from its own turn, not the copied, aborted one
    by_key = {p.key: p for p in capture.participants}
    assert by_key[child].state == "completed"
    assert by_key[child].native_ids["forked_from_id"] == root
    assert by_key[child].name == "/root/forked_child"


def test_v2_result_arrives_as_final_answer_agent_message() -> None:
    capture = read_native(native("v2-fork"))
    root, (child,) = root_and_children(native("v2-fork"))
    path = rollouts(native("v2-fork"))[root]
    (message,) = items(path, "response_item", "agent_message")
    assert message["payload"]["author"] == "/root/forked_child"
    (delivered,) = _relations(capture, "result_delivered")
    assert (delivered.parent_key, delivered.child_key) == (root, child)
    assert delivered.note == "agent_message"
    assert delivered.delivered_text == message["payload"]["content"][0]["text"]
    assert delivered.target_response_id == _response_ids(path)[-1]


def test_nested_depth_two_from_the_parent_chain() -> None:
    capture = read_native(native("v1-nested"))
    by_key = {p.key: p for p in capture.participants}
    depths = sorted((p.depth, p.role) for p in capture.participants)
    assert depths == [(0, "root"), (1, "child"), (2, "child")]
    (grandchild,) = [p for p in capture.participants if p.depth == 2]
    assert grandchild.parent_key is not None
    assert by_key[grandchild.parent_key].depth == 1
    spawns = {(r.parent_key, r.child_key) for r in _relations(capture, "spawn")}
    assert (grandchild.parent_key, grandchild.key) in spawns
    assert len(spawns) == 2 and capture.problems == ()


def test_identical_prompts_are_two_children_told_apart_by_ids() -> None:
    capture = read_native(native("v1-identical-prompts"))
    _root, children = root_and_children(native("v1-identical-prompts"))
    files = rollouts(native("v1-identical-prompts"))
    prompts = {
        json.dumps(items(files[c], "response_item", "message")[-2]["payload"]["content"])
        for c in children
    }
    assert len(children) == 2 and len(prompts) == 1  # nothing in the text tells them apart
    spawns = _relations(capture, "spawn")
    assert {r.child_key for r in spawns} == set(children)
    assert len({r.model_tool_ref for r in spawns}) == 2
    assert capture.problems == ()


def test_child_aborted_when_the_parent_did_not_wait_is_failed() -> None:
    capture = read_native(native("v1-no-wait"))
    _root, (child,) = root_and_children(native("v1-no-wait"))
    (aborted,) = items(rollouts(native("v1-no-wait"))[child], "event_msg", "turn_aborted")
    assert {p.key: p.state for p in capture.participants}[child] == "failed"
    (failed,) = _relations(capture, "child_failed")
    assert failed.child_key == child
    assert failed.note == f"turn aborted: {aborted['payload']['reason']}"
    assert _relations(capture, "child_completed") == _relations(capture, "result_delivered") == []
    assert capture.lifecycle.status == "complete"  # every thread ended, one of them aborted


def test_resumed_root_keeps_its_thread_and_is_confirmed() -> None:
    capture = read_native(native("v1-resume"))
    root, _children = root_and_children(native("v1-resume"))
    path = rollouts(native("v1-resume"))[root]
    assert len(items(path, "event_msg", "task_started")) == 2  # two turns, one thread
    assert confirmed_root_thread(capture) == root
    assert capture.coverage.counts[root] == len(_response_ids(path))


# --- hostile copies ------------------------------------------------------------------


def test_disagreeing_parents_lose_the_lineage(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    _root, (child,) = root_and_children(d)
    other = "01a228f6-0000-7000-8000-000000000000"

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        lines[0]["payload"]["parent_thread_id"] = other  # type: ignore[index]
        return lines

    rewrite(rollouts(d)[child], edit)
    capture = read_native(d)
    by_key = {p.key: p for p in capture.participants}
    assert by_key[child].parent_key is None and by_key[child].role == "child"
    disagree, lost, spawn = capture.problems
    assert lost == NativeProblem(
        "missing_field", "a subagent thread whose parent is not known", f"thread {child}"
    )
    assert (disagree.code, disagree.where) == ("disagreement", f"thread {child}")
    assert disagree.message.startswith("parents disagree (session_meta.parent_thread_id=")
    assert (spawn.code, spawn.message) == (
        "disagreement",
        f"child thread {child} names parent None",
    )
    assert spawn.where is not None and " spawn_agent " in spawn.where


def test_missing_spawn_edge_is_a_problem(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    _root, (child,) = root_and_children(d)
    with sqlite3.connect(d / "state_5.sqlite") as conn:
        conn.execute("DELETE FROM thread_spawn_edges")
    capture = read_native(d)
    message = f"no thread_spawn_edges row for its parent {_root}"
    assert capture.problems == (NativeProblem("missing_record", message, f"thread {child}"),)
    assert str(capture.problems[0]) == f"thread {child}: {message}"


def test_missing_state_db_is_a_problem_but_rollouts_still_count(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    (d / "state_5.sqlite").unlink()
    capture = read_native(d)
    (missing,) = capture.problems
    assert missing.code == "missing_file" and missing.message.startswith(
        "state_5.sqlite is missing"
    )
    assert len(capture.participants) == 2 and len(_relations(capture, "spawn")) == 1


def test_torn_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    root, _children = root_and_children(d)
    path = rollouts(d)[root]
    text = path.read_text()
    path.write_text(text + '{"timestamp":"2026-11-29T20:20:04Z","type":"event_ms')
    capture = read_native(d)
    rel = path.relative_to(d).as_posix()
    lines = len(text.splitlines())
    torn = NativeProblem(
        "not_json", "not JSON (Unterminated string starting at)", f"{rel}:{lines + 1}"
    )
    assert capture.problems == (torn,)


def test_a_record_naming_another_thread_is_not_reassigned(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    root, (child,) = root_and_children(d)

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        for line in lines:
            if line["type"] == "token_usage_record":
                line["payload"]["thread_id"] = root  # type: ignore[index]
        return lines

    rewrite(rollouts(d)[child], edit)
    capture = read_native(d)
    assert capture.coverage.counts[child] == 0  # not counted for either thread
    assert capture.coverage.counts[root] == len(_response_ids(rollouts(d)[root]))
    foreign = [p for p in capture.problems if p.code == "foreign_record"]
    assert foreign and all(
        f"names thread {root}, not the file's {child}" in p.message for p in foreign
    )
    rel = rollouts(d)[child].relative_to(d).as_posix()
    assert all(p.where is not None and p.where.startswith(f"{rel}: #") for p in foreign)


def test_session_meta_outside_an_inherited_block_is_a_problem(tmp_path: Path) -> None:
    d = copy("v2-fork", tmp_path)
    _root, (child,) = root_and_children(d)

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        del lines[0]["payload"]["subagent_history_start_ordinal"]  # type: ignore[attr-defined]
        return lines

    rewrite(rollouts(d)[child], edit)
    capture = read_native(d)
    outside = [p for p in capture.problems if p.code == "unexpected_record"]
    assert [p.message for p in outside] == ["a session_meta outside an inherited history block"]


def test_spawn_output_naming_an_unknown_thread_is_a_problem(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    root, (child,) = root_and_children(d)
    ghost = "01a228f6-ffff-7fff-8fff-ffffffffffff"

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        text = json.dumps(lines).replace(child, ghost)
        return json.loads(text)  # type: ignore[no-any-return]

    rewrite(rollouts(d)[root], edit)
    capture = read_native(d)
    assert [p.message for p in capture.problems if p.code == "missing_file"] == [
        f"child thread {ghost} has no rollout"
    ]


def test_a_response_sampled_before_a_result_arrived_did_not_consume_it(tmp_path: Path) -> None:
    """If the root's last response had been sampled on history older than the
    notification (it was in flight when the notification was recorded), it is not the
    response that saw the notification: nothing later is, so the notification reached no
    model and no delivery is claimed."""
    d = copy("v1-single", tmp_path)
    root, (child,) = root_and_children(d)
    path = rollouts(d)[root]
    (note,) = [
        r
        for r in items(path, "response_item", "message")
        if "<subagent_notification>" in json.dumps(r["payload"]["content"])
    ]
    seen = note["metadata"]["history_sequence"] - 1

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        for line in lines:
            payload = line["payload"]
            if line["type"] == "response_item" and payload.get("role") == "assistant":  # type: ignore[union-attr]
                line["metadata"]["sampled_through_sequence"] = seen  # type: ignore[index]
        return lines

    rewrite(path, edit)
    capture = read_native(d)
    delivered = {r.note: r for r in _relations(capture, "result_delivered")}
    assert set(delivered) == {"wait_agent output"}
    assert capture.coverage.notes[1:] == (
        f"thread {root}: the result of child {child} ({path.relative_to(d).as_posix()} "
        f"#{note['ordinal']} subagent_notification) came after its last response; no model "
        "call received it",
    )
    # the wait output was older than that sampling point: still bound
    assert delivered["wait_agent output"].target_response_id == _response_ids(path)[-1]


def test_no_rollouts_is_a_problem_and_an_unknown_lifecycle(tmp_path: Path) -> None:
    capture = read_native(tmp_path)
    assert capture.participants == () and dict(capture.identity.keys) == {}
    assert capture.lifecycle.status == "unknown"
    assert [p.code for p in capture.problems] == ["missing_file", "missing_file"]
    assert capture.problems[-1].message == (
        "no rollout under sessions/: no thread to attribute calls to"
    )
    with pytest.raises(HarnessError):
        confirmed_root_thread(capture)


def test_a_thread_still_in_its_turn_leaves_the_lifecycle_pending(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    _root, (child,) = root_and_children(d)
    rewrite(
        rollouts(d)[child],
        lambda lines: [x for x in lines if x["payload"].get("type") != "task_complete"],  # type: ignore[union-attr]
    )
    capture = read_native(d)
    assert capture.lifecycle.status == "pending"
    assert capture.lifecycle.pending_keys == (child,)
    assert _relations(capture, "child_completed") == []


def test_tools_loaded_by_tool_search_in_the_root_bar_the_main_trajectory(tmp_path: Path) -> None:
    """`tool_search_output` never occurs against the mock (it needs app connectors), so a
    line of the Responses shape is appended to real rollouts."""
    d = copy("v1-single", tmp_path)
    root, (child,) = root_and_children(d)
    line = {
        "timestamp": "2026-11-29T20:20:04.000Z",
        "ordinal": 99,
        "type": "response_item",
        "payload": {
            "type": "tool_search_output",
            "call_id": "call_search",
            "status": "completed",
            "execution": "client",
            "tools": [{"type": "function", "name": "mcp__calendar__list_events"}],
        },
    }
    rewrite(rollouts(d)[child], lambda lines: [*lines, line])
    assert read_native(d).main_trajectory_blocked_by == ()  # a child's tools: no bar
    rewrite(rollouts(d)[root], lambda lines: [*lines, line])
    (block,) = read_native(d).main_trajectory_blocked_by
    assert block.startswith("dynamic_tools_loaded: ") and f"root thread {root}" in block
    assert "#99 tool_search_output" in block


def test_confirmed_root_refuses_disagreeing_logs(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    with sqlite3.connect(d / "state_5.sqlite") as conn:
        conn.execute("DELETE FROM thread_spawn_edges")
    with pytest.raises(HarnessError, match="not confirmed"):
        confirmed_root_thread(read_native(d))

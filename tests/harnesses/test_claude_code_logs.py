"""The Claude Code native reader over real 2.1.332 transcripts, and over corrupted copies.

Expected values come from the raw files themselves (the tool_use lines, meta.json,
the notification lines), never from the reader's own output.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from roller.harnesses.base import NativeCapture, NativeProblem, NativeRelation
from roller.harnesses.claude_code.logs import read_native

from .claude_code_fixtures import (
    lines,
    main_transcript,
    native,
    native_copy,
    subagent_files,
    write_lines,
)

FIXTURES = (
    "single",
    "parallel",
    "nested",
    "foreground",
    "nested-background",
    "midturn-notification",
    "killed-child",
)


def _meta(native_dir: Path, agent_id: str) -> dict[str, object]:
    path = subagent_files(native_dir)[agent_id].with_suffix(".meta.json")
    value = json.loads(path.read_text())
    assert isinstance(value, dict)
    return value


def _message_ids(path: Path) -> list[str]:
    return [ln["message"]["id"] for ln in lines(path) if ln.get("type") == "assistant"]


def _spawn_lines(path: Path) -> dict[str, str]:
    """Agent tool_use id -> message.id of the line that carries it."""
    return {
        block["id"]: ln["message"]["id"]
        for ln in lines(path)
        if ln.get("type") == "assistant"
        for block in ln["message"]["content"]
        if block.get("type") == "tool_use" and block.get("name") == "Agent"
    }


def _tool_result_lines(path: Path, tool_id: str) -> list[dict[str, object]]:
    return [
        ln
        for ln in lines(path)
        if ln.get("type") == "user"
        and isinstance(ln["message"]["content"], list)
        and any(b.get("tool_use_id") == tool_id for b in ln["message"]["content"])
    ]


def _of(native_capture: NativeCapture, kind: str) -> list[NativeRelation]:
    return [r for r in native_capture.relations if r.type == kind]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_message_id_maps_to_the_transcript_it_is_in(name: str) -> None:
    nc = read_native(native(name))
    assert nc.problems == ()
    expected = {"main": set(_message_ids(main_transcript(native(name))))}
    for agent_id, path in subagent_files(native(name)).items():
        expected[agent_id] = set(_message_ids(path))
    assert {k: set(v) for k, v in nc.coverage.ids.items()} == expected
    assert nc.coverage.basis == "per_message_id"
    assert nc.identity.basis == "response_id"
    for key, ids in expected.items():
        for mid in ids:
            assert nc.identity.keys[mid] == (key,)
    session = main_transcript(native(name)).stem
    assert nc.wire_aliases == {
        session: "main",
        **{f"{session}:{agent_id}": agent_id for agent_id in expected if agent_id != "main"},
    }


def test_single_background_child_launch_then_notification() -> None:
    nc = read_native(native("single"))
    main = main_transcript(native("single"))
    ((agent_id, _),) = subagent_files(native("single")).items()
    meta = _meta(native("single"), agent_id)
    assert meta["requestShape"] == "background" and meta["finished"] is True
    tool_id = meta["toolUseId"]
    spawn_mid = _spawn_lines(main)[str(tool_id)]

    (spawn,) = _of(nc, "spawn")
    assert (spawn.parent_key, spawn.child_key, spawn.tool_call_id) == ("main", agent_id, tool_id)
    assert spawn.source_response_id == spawn_mid
    (ack,) = _of(nc, "launch_acknowledged")
    assert ack.tool_call_id == tool_id and ack.source_response_id == spawn_mid

    notification = next(
        ln for ln in lines(main) if (ln.get("origin") or {}).get("kind") == "task-notification"
    )
    answer = next(
        ln for ln in lines(main)
        if ln.get("type") == "assistant" and ln.get("parentUuid") == notification["uuid"]
    )  # fmt: skip
    (delivered,) = _of(nc, "result_delivered")
    assert delivered.parent_key == "main" and delivered.tool_call_id == tool_id
    assert delivered.target_response_id == answer["message"]["id"]
    assert delivered.delivered_text == notification["message"]["content"]
    assert f"<tool-use-id>{tool_id}</tool-use-id>" in (delivered.delivered_text or "")
    assert any(e.ref == notification["uuid"] for e in delivered.evidence)
    (completed,) = _of(nc, "child_completed")
    assert completed.child_key == agent_id and not _of(nc, "child_failed")
    assert nc.lifecycle.status == "complete"
    states = {p.key: (p.role, p.parent_key, p.depth, p.state) for p in nc.participants}
    assert states == {
        "main": ("root", None, 0, "completed"),
        agent_id: ("child", "main", 1, "completed"),
    }


def test_parallel_tool_calls_are_two_lines_of_one_message_id() -> None:
    main = main_transcript(native("parallel"))
    ids = Counter(_message_ids(main))
    (shared,) = [mid for mid, n in ids.items() if n == 2]  # the real two-lines case
    spawns = _spawn_lines(main)
    assert len(spawns) == 2 and set(spawns.values()) == {shared}

    nc = read_native(native("parallel"))
    assert len(nc.coverage.ids["main"]) == len(ids)  # one output, not two
    assert nc.identity.keys[shared] == ("main",)
    spawn_rels = _of(nc, "spawn")
    assert {r.tool_call_id for r in spawn_rels} == set(spawns)
    assert {r.source_response_id for r in spawn_rels} == {shared}
    by_tool = {
        str(_meta(native("parallel"), a)["toolUseId"]): a
        for a in subagent_files(native("parallel"))
    }
    assert {r.tool_call_id: r.child_key for r in spawn_rels} == by_tool
    # Both notifications are answered by the same later response, each bound to its own tool.
    delivered = _of(nc, "result_delivered")
    assert {r.tool_call_id for r in delivered} == set(spawns)
    assert len({r.target_response_id for r in delivered}) == 1
    assert nc.lifecycle.status == "complete"


def test_nested_foreground_depth_two_without_tool_use_result() -> None:
    nc = read_native(native("nested"))
    agents = subagent_files(native("nested"))
    (grandchild,) = [a for a in agents if _meta(native("nested"), a).get("parentAgentId")]
    (child,) = [a for a in agents if a != grandchild]
    assert _meta(native("nested"), grandchild)["parentAgentId"] == child
    # The child's transcript holds the grandchild's result line, without toolUseResult.
    tool_id = str(_meta(native("nested"), grandchild)["toolUseId"])
    result_lines = _tool_result_lines(agents[child], tool_id)
    assert len(result_lines) == 1 and "toolUseResult" not in result_lines[0]

    depth = {p.key: (p.parent_key, p.depth, p.state) for p in nc.participants}
    assert depth[child] == ("main", 1, "completed")
    assert depth[grandchild] == (child, 2, "completed")
    delivered = {r.child_key: r for r in _of(nc, "result_delivered")}
    assert delivered[grandchild].parent_key == child
    assert delivered[grandchild].tool_call_id == tool_id
    assert delivered[grandchild].target_response_id is None  # a tool result, not a notification
    assert "no toolUseResult" in (delivered[grandchild].note or "")
    assert delivered[child].note is None
    assert {r.child_key for r in _of(nc, "child_completed")} == {child, grandchild}
    assert not _of(nc, "launch_acknowledged")
    assert nc.lifecycle.status == "complete"


def test_foreground_has_no_launch_acknowledgement() -> None:
    nc = read_native(native("foreground"))
    ((agent_id, _),) = subagent_files(native("foreground")).items()
    assert _meta(native("foreground"), agent_id)["requestShape"] == "foreground"
    assert {r.type for r in nc.relations} == {"spawn", "result_delivered", "child_completed"}
    assert nc.lifecycle.status == "complete"


def test_background_grandchild_is_delivered_to_the_root() -> None:
    """2.1.332: the child stopped before its background grandchild; the root got it."""
    nc = read_native(native("nested-background"))
    agents = subagent_files(native("nested-background"))
    (grandchild,) = [
        a for a in agents if _meta(native("nested-background"), a).get("parentAgentId")
    ]
    (child,) = [a for a in agents if a != grandchild]
    main = main_transcript(native("nested-background"))
    notified = [
        ln["message"]["content"]
        for ln in lines(main)
        if (ln.get("origin") or {}).get("kind") == "task-notification"
    ]
    assert any(f"<task-id>{grandchild}</task-id>" in text for text in notified)

    (spawn,) = [r for r in _of(nc, "spawn") if r.child_key == grandchild]
    assert spawn.parent_key == child
    (delivered,) = [r for r in _of(nc, "result_delivered") if r.child_key == grandchild]
    assert delivered.parent_key == "main"
    assert delivered.source_response_id == spawn.source_response_id
    assert "not to the spawner" in (delivered.note or "")
    (ack,) = [r for r in _of(nc, "launch_acknowledged") if r.child_key == grandchild]
    assert ack.parent_key == child and "no toolUseResult" in (ack.note or "")
    (done,) = [r for r in _of(nc, "child_completed") if r.child_key == grandchild]
    assert done.parent_key == child
    assert nc.lifecycle.status == "complete"


def test_midturn_notification_arrives_as_a_queued_command_attachment() -> None:
    main = main_transcript(native("midturn-notification"))
    (attachment,) = [
        ln for ln in lines(main)
        if (ln.get("attachment") or {}).get("commandMode") == "task-notification"
    ]  # fmt: skip
    assert not [
        ln for ln in lines(main) if (ln.get("origin") or {}).get("kind") == "task-notification"
    ]
    nc = read_native(native("midturn-notification"))
    (delivered,) = _of(nc, "result_delivered")
    assert delivered.delivered_text == attachment["attachment"]["prompt"]
    assert delivered.evidence[0].ref == attachment["uuid"]
    answer = next(ln for ln in lines(main) if ln.get("parentUuid") == attachment["uuid"])
    assert delivered.target_response_id == answer["message"]["id"]
    assert nc.lifecycle.status == "complete"


def test_a_child_still_running_when_the_harness_stopped_is_pending() -> None:
    ((agent_id, _),) = subagent_files(native("killed-child")).items()
    assert "finished" not in _meta(native("killed-child"), agent_id)
    nc = read_native(native("killed-child"))
    assert nc.lifecycle.status == "pending"
    assert nc.lifecycle.pending_keys == (agent_id,)
    states = {p.key: p.state for p in nc.participants}
    assert states == {"main": "running", agent_id: "running"}
    assert {r.type for r in nc.relations} == {"spawn", "launch_acknowledged"}


# --- corrupted copies --------------------------------------------------------------


def test_missing_meta_json_makes_the_lifecycle_unknown(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    ((agent_id, path),) = subagent_files(copy).items()
    path.with_suffix(".meta.json").unlink()
    nc = read_native(copy)
    assert nc.lifecycle.status == "unknown"
    meta = path.with_suffix(".meta.json").relative_to(copy).as_posix()
    missing = NativeProblem("missing_file", f"missing: subagent {agent_id} has no metadata", meta)
    assert missing in nc.problems
    assert str(missing) == f"{meta}: missing: subagent {agent_id} has no metadata"
    assert {p.key: p.state for p in nc.participants}[agent_id] == "unknown"
    assert not [r for r in nc.relations if r.child_key == agent_id]


def test_meta_naming_another_tool_call_binds_nothing(tmp_path: Path) -> None:
    copy = native_copy("parallel", tmp_path)
    agents = subagent_files(copy)
    a, b = sorted(agents)
    meta_a = agents[a].with_suffix(".meta.json")
    data = json.loads(meta_a.read_text())
    data["toolUseId"] = "toolu_not_in_any_transcript"
    meta_a.write_text(json.dumps(data))
    nc = read_native(copy)
    assert nc.lifecycle.status == "unknown"
    (problem,) = nc.problems
    assert (problem.code, problem.where) == ("disagreement", meta_a.relative_to(copy).as_posix())
    assert problem.message.endswith("tool call toolu_not_in_any_transcript is in no transcript")
    assert {r.child_key for r in nc.relations if r.type == "spawn"} == {b}


def test_a_toolUseResult_naming_another_agent_is_a_problem(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    main = main_transcript(copy)
    values = lines(main)
    for v in values:
        if isinstance(v.get("toolUseResult"), dict) and "agentId" in v["toolUseResult"]:
            v["toolUseResult"]["agentId"] = "a0000000000000000"
    write_lines(main, values)
    nc = read_native(copy)
    assert nc.lifecycle.status == "unknown"
    (problem,) = nc.problems
    assert (problem.code, problem.where) == ("disagreement", main.relative_to(copy).as_posix())
    assert "names agent a0000000000000000" in problem.message


def test_a_failed_notification_is_child_failed(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    main = main_transcript(copy)
    main.write_text(
        main.read_text().replace("<status>completed</status>", "<status>failed</status>")
    )
    nc = read_native(copy)
    assert [r.type for r in nc.relations if r.type.startswith("child_")] == ["child_failed"]
    child = next(p for p in nc.participants if p.role == "child")
    assert child.state == "failed"
    assert nc.lifecycle.status == "complete"  # it ended, and the failure was delivered


def test_an_unanswered_notification_leaves_the_lifecycle_pending(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    main = main_transcript(copy)
    values = lines(main)
    note = next(
        i
        for i, v in enumerate(values)
        if (v.get("origin") or {}).get("kind") == "task-notification"
    )
    write_lines(main, values[: note + 1])  # the process stopped before answering it
    nc = read_native(copy)
    (delivered,) = _of(nc, "result_delivered")
    assert delivered.target_response_id is None
    assert "no later response" in (delivered.note or "")
    assert nc.lifecycle.status == "pending"


def test_one_message_id_in_two_transcripts_maps_to_both(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    ((agent_id, path),) = subagent_files(copy).items()
    root_id = _message_ids(main_transcript(copy))[0]
    values = lines(path)
    for v in values:
        if v.get("type") == "assistant":
            v["message"]["id"] = root_id
    write_lines(path, values)
    nc = read_native(copy)
    assert set(nc.identity.keys[root_id]) == {"main", agent_id}
    message = f"response id {root_id} is in several transcripts: main, {agent_id}"
    assert NativeProblem("duplicate_id", message) in nc.problems


def test_a_torn_last_line_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    copy = native_copy("single", tmp_path)
    main = main_transcript(copy)
    whole = main.read_bytes()
    assert whole.endswith(b"\n")
    main.write_bytes(whole + b'{"type": "assistant", "message": {"id": "msg_')
    nc = read_native(copy)
    torn = f"{main.relative_to(copy).as_posix()}:{len(whole.splitlines()) + 1}"
    assert nc.problems == (NativeProblem("not_json", "not a JSON line (torn or corrupt)", torn),)
    assert nc.lifecycle.status == "complete"


def test_no_transcript_at_all(tmp_path: Path) -> None:
    nc = read_native(tmp_path)
    assert nc.participants == () and nc.lifecycle.status == "unknown"
    message = "expected one main transcript under projects/*/, found 0"
    assert nc.problems == (NativeProblem("unexpected_count", message),)

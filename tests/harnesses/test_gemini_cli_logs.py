"""The Gemini CLI native reader over real 0.61.0 chats + telemetry, and over damaged copies.

Expected values come from the raw files themselves (chat headers, the spawn tool calls'
agentId, the telemetry records read with plain json), never from the reader's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roller.harnesses.base import NativeProblem
from roller.harnesses.gemini_cli.chats import wire_tool_id
from roller.harnesses.gemini_cli.logs import read_native

from .fixture_capture import native_copy

FIXTURES = (
    "single",
    "parallel",
    "identical-prompts",
    "file-sharing",
    "tool-error",
    "plain-fixed-model",
    "child-failed",
    "tool-config",
)
SPAWNING = {
    "single": 1,
    "parallel": 2,
    "identical-prompts": 2,
    "file-sharing": 1,
    "child-failed": 1,
    "tool-config": 1,
}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _chats(native: Path) -> dict[str, tuple[str, Path]]:
    """sessionId -> (kind, file), from each chat's first line."""
    out = {}
    for path in native.glob("tmp/*/chats/**/*.jsonl"):
        header = _jsonl(path)[0]
        out[header["sessionId"]] = (header["kind"], path)
    return out


def _spawn_calls(path: Path) -> list[dict[str, Any]]:
    """The last-written copy of each tool call carrying an agentId."""
    calls: dict[str, dict[str, Any]] = {}
    for record in _jsonl(path):
        for call in record.get("toolCalls") or []:
            if "agentId" in call:
                calls[call["id"]] = call
    return list(calls.values())


def _responses(native: Path) -> list[dict[str, Any]]:
    decoder, text, pos, out = json.JSONDecoder(), (native / "telemetry.log").read_text(), 0, []
    while pos < len(text):
        value, end = decoder.raw_decode(text, pos)
        pos = end + 1
        attrs = value["attributes"]
        if attrs["event.name"] == "gemini_cli.api_response":
            out.append(attrs)
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_real_logs_read_without_problems(name: str, tmp_path: Path) -> None:
    native = native_copy("gemini-cli", name, tmp_path)
    capture = read_native(native)
    assert capture.problems == ()
    assert capture.subtasks == "supported"
    assert capture.lifecycle.status == "complete"
    chats = _chats(native)
    (root,) = [sid for sid, (kind, _) in chats.items() if kind == "main"]
    roots = [p for p in capture.participants if p.role == "root"]
    assert [p.key for p in roots] == [root]
    assert roots[0].state == "completed"
    children = {p.key: p for p in capture.participants if p.role == "child"}
    assert set(children) == {sid for sid, (kind, _) in chats.items() if kind == "subagent"}
    assert len(children) == SPAWNING.get(name, 0)
    for call in _spawn_calls(chats[root][1]):
        child = children[call["agentId"]]
        assert child.parent_key == root and child.depth == 1
        assert child.native_ids["tool_call_id"] == call["id"]
        assert child.name == call["args"]["agent_name"]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_logged_response_id_joins_the_prompts_owner(name: str, tmp_path: Path) -> None:
    native = native_copy("gemini-cli", name, tmp_path)
    capture = read_native(native)
    expected: dict[str, tuple[str, ...]] = {}
    for attrs in _responses(native):
        chunks = json.loads(attrs["response_text"])
        chunks = chunks if isinstance(chunks, list) else [chunks]
        # the prompt id is the owner's session id, or it followed by `#…<turn>`
        owner = attrs["prompt_id"].split("#")[0]
        for chunk in chunks:
            expected[chunk["responseId"]] = (owner,)
    assert dict(capture.identity.keys) == expected
    assert capture.identity.basis == "response_id"
    assert capture.coverage.basis == "per_response_id"
    assert sum(len(v) for v in capture.coverage.ids.values()) == len(expected)


def test_router_side_calls_are_joined_to_the_turn_they_serve(tmp_path: Path) -> None:
    native = native_copy("gemini-cli", "parallel", tmp_path)
    capture = read_native(native)
    routers = [a for a in _responses(native) if a["role"] == "utility_router"]
    assert len(routers) == 3  # the root's turn and each child's
    owners = set()
    for attrs in routers:
        rid = json.loads(attrs["response_text"])["responseId"]
        owners |= set(capture.identity.keys[rid])
    assert owners == {p.key for p in capture.participants}


def test_spawns_are_bound_to_the_response_that_emitted_them(tmp_path: Path) -> None:
    native = native_copy("gemini-cli", "parallel", tmp_path)
    capture = read_native(native)
    (emitting,) = [
        a
        for a in _responses(native)
        if "invoke_agent" in a["response_text"] and a["role"] == "main"
    ]
    emitting_id = json.loads(emitting["response_text"])[0]["responseId"]
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert len(spawns) == 2
    for rel in spawns:
        assert rel.source_response_id == emitting_id
        native_id = next(e.ref for e in rel.evidence if e.path.endswith(".jsonl"))
        assert native_id is not None and native_id == f"invoke_agent__{rel.tool_call_id}"
    # ... and the ids the CLI assigned are listed, prefix removed, in output order
    assigned = capture.assigned_tool_ids[emitting_id]
    assert [a.name for a in assigned] == ["invoke_agent", "invoke_agent"]
    assert {a.id for a in assigned} == {r.tool_call_id for r in spawns}


def test_delivery_and_completion_per_child(tmp_path: Path) -> None:
    capture = read_native(native_copy("gemini-cli", "parallel", tmp_path))
    children = {p.key for p in capture.participants if p.role == "child"}
    for kind in ("spawn", "result_delivered", "child_completed"):
        assert {r.child_key for r in capture.relations if r.type == kind} == children
    assert not [r for r in capture.relations if r.type == "child_failed"]


def test_subagent_tool_ids_are_assigned_from_the_prompt_id_the_chat_confirms(
    tmp_path: Path,
) -> None:
    native = native_copy("gemini-cli", "file-sharing", tmp_path)
    capture = read_native(native)
    (child,) = [p.key for p in capture.participants if p.role == "child"]
    child_responses = [a for a in _responses(native) if a["role"] == "subagent"]
    assert len(child_responses) == 2  # run_shell_command, then complete_task
    for attrs in child_responses:
        rid = json.loads(attrs["response_text"])[0]["responseId"]
        (assigned,) = capture.assigned_tool_ids[rid]
        assert assigned.id == f"{attrs['prompt_id']}-0"
        assert assigned.id.startswith(f"{child}#")


def test_a_child_that_never_completes_its_task_failed(tmp_path: Path) -> None:
    capture = read_native(native_copy("gemini-cli", "child-failed", tmp_path))
    (child,) = [p for p in capture.participants if p.role == "child"]
    assert child.state == "failed"
    (failed,) = [r for r in capture.relations if r.type == "child_failed"]
    assert failed.note == "terminate reason ERROR_NO_COMPLETE_TASK_CALL"
    assert [r.type for r in capture.relations if r.child_key == child.key] == [
        "spawn",
        "result_delivered",
        "child_failed",
    ]
    assert capture.lifecycle.status == "complete"  # it ended, and its result was delivered


def test_terminate_reason_falls_back_to_the_spawn_result_without_telemetry(
    tmp_path: Path,
) -> None:
    native = native_copy("gemini-cli", "child-failed", tmp_path)
    (native / "telemetry.log").unlink()
    capture = read_native(native)
    (child,) = [p for p in capture.participants if p.role == "child"]
    assert child.state == "failed"
    assert capture.identity.keys == {}
    message = "telemetry.log is missing: no call can be joined to a participant"
    assert capture.problems == (NativeProblem("missing_file", message),)


def test_killed_run_leaves_an_unlinked_child_and_an_unknown_lifecycle(tmp_path: Path) -> None:
    native = native_copy("gemini-cli", "killed-child", tmp_path)
    capture = read_native(native)
    (child,) = [p for p in capture.participants if p.role == "child"]
    # the spawn's tool call is written when it finishes: the kill came first
    assert child.parent_key is None and child.state == "unknown"
    assert capture.lifecycle.status == "unknown"
    assert capture.lifecycle.pending_keys == (child.key,)
    assert (
        NativeProblem("unexpected_count", "0 spawn tool calls name it", f"subagent {child.key}")
        in capture.problems
    )
    assert not capture.relations


def test_a_prompt_id_naming_no_chat_joins_nothing(tmp_path: Path) -> None:
    native = native_copy("gemini-cli", "single", tmp_path)
    text = (native / "telemetry.log").read_text()
    (child,) = [sid for sid, (kind, _) in _chats(native).items() if kind == "subagent"]
    (native / "telemetry.log").write_text(text.replace(f'"{child}#', '"someone-else#'))
    capture = read_native(native)
    assert child not in {o for owners in capture.identity.keys.values() for o in owners}
    unknown = [p for p in capture.problems if p.code == "unknown_reference"]
    assert unknown and all(p.where == "telemetry.log" for p in unknown)
    assert all(p.message.startswith("prompt id someone-else#") for p in unknown)
    assert all("names no chat" in p.message for p in unknown)


def test_duplicate_and_corrupt_chat_lines_are_problems(tmp_path: Path) -> None:
    native = native_copy("gemini-cli", "single", tmp_path)
    (_, main_path) = next(v for v in _chats(native).values() if v[0] == "main")
    with main_path.open("a") as f:
        f.write("{not json\n")
    (main_path.parent / "copy.jsonl").write_text(main_path.read_text())
    capture = read_native(native)
    rel = main_path.relative_to(native).as_posix()
    lines = len(main_path.read_text().splitlines())
    assert NativeProblem("not_json", "not JSON", f"{rel}:{lines}") in capture.problems
    (duplicate,) = [p for p in capture.problems if p.code == "duplicate_id"]
    # copy.jsonl sorts first, so it is the one kept
    assert duplicate.where == rel
    assert duplicate.message.endswith(f"also has {rel.rsplit('/', 1)[0]}/copy.jsonl")


def test_wire_tool_id_removes_only_its_own_tools_prefix() -> None:
    assert wire_tool_id("invoke_agent", "invoke_agent__invoke_agent_1_0") == "invoke_agent_1_0"
    assert wire_tool_id("invoke_agent", "invoke_agent__gcall_x") == "gcall_x"
    assert wire_tool_id("complete_task", "a1#0-0") == "a1#0-0"
    assert wire_tool_id("read_file", "invoke_agent__x") == "invoke_agent__x"


def test_unreadable_chats_and_telemetry_are_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    native = native_copy("gemini-cli", "single", tmp_path)
    (_, main_path) = next(v for v in _chats(native).values() if v[0] == "main")
    (main_path.parent / "zz-unreadable.jsonl").mkdir()  # read_bytes fails on a directory
    telemetry = native / "telemetry.log"
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == telemetry:
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    capture = read_native(native)
    chat_rel = (main_path.parent / "zz-unreadable.jsonl").relative_to(native).as_posix()
    assert capture.problems[:2] == (
        NativeProblem("unreadable_file", "unreadable (Is a directory)", chat_rel),
        NativeProblem("unreadable_file", "unreadable (Permission denied)", "telemetry.log"),
    )
    assert capture.identity.keys == {}  # nothing joins without the telemetry

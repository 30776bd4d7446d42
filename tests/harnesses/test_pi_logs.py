"""The Pi native reader over real 0.73.1 session files (all three APIs), and damaged copies.

Expected values come from the session files themselves (read with plain json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roller.harnesses.base import NativeProblem
from roller.harnesses.pi.logs import read_native

from .fixture_capture import native_copy

FIXTURES = {
    "responses-tool-error": "openai-responses",
    "completions-tool-error": "openai-completions",
    "anthropic-tool-error": "anthropic-messages",
    "responses-plain": "openai-responses",
}
RESPONSE_ID_PREFIX = {
    "openai-responses": "resp_",
    "openai-completions": "chatcmpl-",
    "anthropic-messages": "msg_",
}


def _session(native: Path) -> tuple[Path, list[dict[str, Any]]]:
    (path,) = native.glob("sessions/*/*.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("name", FIXTURES)
def test_real_session_one_root_joined_by_response_id(name: str, tmp_path: Path) -> None:
    native = native_copy("pi", name, tmp_path)
    capture = read_native(native)
    assert capture.problems == ()
    path, entries = _session(native)
    session_id = entries[0]["id"]
    assert path.name.endswith(f"_{session_id}.jsonl")
    assistants = [
        e["message"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert {a["api"] for a in assistants} == {FIXTURES[name]}
    (root,) = capture.participants
    assert (root.key, root.role, root.parent_key, root.depth) == (session_id, "root", None, 0)
    assert root.state == "completed"
    assert dict(capture.identity.keys) == {a["responseId"]: (session_id,) for a in assistants}
    assert all(k.startswith(RESPONSE_ID_PREFIX[FIXTURES[name]]) for k in capture.identity.keys)
    assert capture.coverage.basis == "per_session_assistant_count"
    assert dict(capture.coverage.counts) == {session_id: len(assistants)}
    assert capture.subtasks == "not_available_in_bundled_profile"
    assert capture.relations == () and capture.lifecycle.status == "complete"
    assert dict(capture.wire_aliases) == {session_id: session_id}


def test_responses_tool_ids_are_call_id_and_item_id(tmp_path: Path) -> None:
    _, entries = _session(native_copy("pi", "responses-tool-error", tmp_path))
    (call,) = [
        b
        for e in entries
        if e["type"] == "message"
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "toolCall"
    ]
    call_id, item_id = call["id"].split("|")
    assert call_id.startswith("call_") and item_id.startswith("fc_")


def test_a_failed_call_is_not_a_completed_assistant(tmp_path: Path) -> None:
    native = native_copy("pi", "responses-plain", tmp_path)
    path, entries = _session(native)
    failed = {
        "type": "message",
        "id": "deadbeef",
        "parentId": entries[-1]["id"],
        "timestamp": "2026-11-29T00:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [],
            "api": "openai-responses",
            "stopReason": "error",
            "errorMessage": "500 upstream",
        },
    }
    with path.open("a") as f:
        f.write(json.dumps(failed) + "\n")
    capture = read_native(native)
    session_id = entries[0]["id"]
    assert dict(capture.coverage.counts) == {session_id: 1}
    assert capture.participants[0].state == "failed"
    assert capture.problems == ()


def test_missing_response_id_corrupt_lines_and_extra_sessions_are_problems(tmp_path: Path) -> None:
    native = native_copy("pi", "responses-plain", tmp_path)
    path, entries = _session(native)
    for entry in entries:
        if entry.get("type") == "message" and entry["message"]["role"] == "assistant":
            del entry["message"]["responseId"]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + "{torn\n")
    other = path.with_name("2026-11-29T00-00-00-000Z_other.jsonl")
    other.write_text(json.dumps({"type": "session", "version": 3, "id": "other"}) + "\n")
    capture = read_native(native)
    assert capture.identity.keys == {}
    rel = path.relative_to(native).as_posix()
    no_id = NativeProblem("missing_field", "a completed assistant message has no responseId", rel)
    assert no_id in capture.problems
    assert NativeProblem("not_json", "not JSON", f"{rel}:{len(entries) + 1}") in capture.problems
    assert capture.problems[-1] == NativeProblem(
        "unexpected_count", "expected one session file, found 2"
    )


def test_no_sessions_at_all(tmp_path: Path) -> None:
    capture = read_native(tmp_path)
    assert capture.participants == ()
    assert capture.problems == (
        NativeProblem("unexpected_count", "expected one session file, found 0"),
    )


def test_a_session_file_that_cannot_be_read_is_a_problem(tmp_path: Path) -> None:
    native = native_copy("pi", "responses-plain", tmp_path)
    path, _entries = _session(native)
    path.with_name("2026-11-29T00-00-00-000Z_unreadable.jsonl").mkdir()  # read_bytes fails
    capture = read_native(native)
    rel = path.with_name("2026-11-29T00-00-00-000Z_unreadable.jsonl").relative_to(native)
    (problem,) = capture.problems
    assert (problem.code, problem.where) == ("unreadable_file", rel.as_posix())
    assert problem.message == "unreadable (Is a directory)"
    assert len(capture.participants) == 1  # the readable session still counts

"""The OpenCode store reader over real 1.18.33 stores: the rows and fields it relies on,
that it never modifies the file, and that a broken store is reported, never raised."""

from __future__ import annotations

import hashlib
from pathlib import Path

from roller.harnesses.base import NativeProblem
from roller.harnesses.opencode.store import read_store

from .opencode_fixtures import data_of, native_copy, set_data, sql


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_single_run_rows(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    store = read_store(db)
    assert store.problems == ()
    (root,) = [s for s in store.sessions if s.parent_id is None]
    (child,) = [s for s in store.sessions if s.parent_id is not None]
    assert child.parent_id == root.id
    assert (root.agent, child.agent) == ("build", "general")
    assert child.title == "roller subtask a (@general subagent)"
    assert all(s.id.startswith("ses_") for s in store.sessions)
    # The root: the user's message, the spawning turn, the final turn.
    roles = [m.role for m in store.messages if m.session_id == root.id]
    assert roles == ["user", "assistant", "assistant"]
    finishes = [
        m.finish for m in store.messages if m.session_id == root.id and m.role == "assistant"
    ]
    assert finishes == ["tool-calls", "stop"]
    assert all(m.completed and m.error is None for m in store.messages if m.role == "assistant")
    (task,) = [p for p in store.parts if p.tool == "task"]
    assert task.session_id == root.id
    assert task.call_id is not None and task.call_id.startswith("call_")
    assert task.status == "completed"
    assert task.metadata["sessionId"] == child.id
    assert task.metadata["parentSessionId"] == root.id
    assert task.input["subagent_type"] == "general"
    assert task.output is not None
    assert task.output.startswith(f'<task id="{child.id}" state="completed">')
    # Every assistant message that answered has its step-finish part.
    finished = {p.message_id for p in store.parts if p.type == "step-finish"}
    assert {m.id for m in store.messages if m.role == "assistant"} <= finished


def test_the_store_is_never_modified(tmp_path: Path) -> None:
    native = native_copy("parallel", tmp_path)
    db = native / "opencode.db"
    before = _digest(db)
    read_store(db)
    assert _digest(db) == before
    assert sorted(p.name for p in native.iterdir()) == ["opencode.db"]  # no -wal/-shm/-journal


def test_a_missing_store_is_a_problem(tmp_path: Path) -> None:
    store = read_store(tmp_path / "opencode.db")
    assert store.sessions == ()
    assert store.problems == (
        NativeProblem("missing_file", "opencode.db was not found (the harness wrote no store)"),
    )


def test_a_store_with_its_wal_beside_it_is_refused(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    db.with_name("opencode.db-wal").write_bytes(b"")
    store = read_store(db)
    assert store.sessions == ()
    assert store.problems == (
        NativeProblem(
            "unreadable_file", "opencode.db has a -wal file beside it: not a consolidated copy"
        ),
    )


def test_a_file_that_is_not_sqlite_is_a_problem(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    db.write_bytes(b"this is not a database" * 100)
    store = read_store(db)
    (problem,) = store.problems
    assert store.sessions == () and problem.code == "unreadable_file"
    assert problem.message.startswith("opencode.db cannot be read: ")


def test_a_malformed_row_is_skipped_and_reported(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((message_id,),) = sql(db, "SELECT id FROM message ORDER BY id LIMIT 1")
    sql(db, "UPDATE message SET data = 'not json' WHERE id = ?", message_id)
    ((part_id,),) = sql(db, "SELECT id FROM part ORDER BY id LIMIT 1")
    sql(db, "UPDATE part SET data = '[1, 2]' WHERE id = ?", part_id)
    store = read_store(db)
    assert message_id not in {m.id for m in store.messages}
    assert part_id not in {p.id for p in store.parts}
    assert store.problems == (
        NativeProblem(
            "not_an_object", "data is not a JSON object with a role", f"message {message_id}"
        ),
        NativeProblem("not_an_object", "data is not a JSON object with a type", f"part {part_id}"),
    )
    assert str(store.problems[0]) == f"message {message_id}: data is not a JSON object with a role"


def test_error_names_and_messages_are_kept(tmp_path: Path) -> None:
    db = native_copy("single", tmp_path) / "opencode.db"
    ((mid,),) = sql(
        db,
        "SELECT id FROM message WHERE json_extract(data, '$.role') = 'assistant' "
        "ORDER BY id LIMIT 1",
    )
    data = data_of(db, "message", mid)
    data["error"] = {"name": "APIError", "data": {"message": "upstream said no"}}
    set_data(db, "message", mid, data)
    (message,) = [m for m in read_store(db).messages if m.id == mid]
    assert message.error == "APIError: upstream said no"

"""The OpenClaw reader over small stores shaped like 2026.9.6's: what it takes from them,
and that a damaged store leaves calls unattributed or the run partial, never attributed
to the wrong participant."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from roller.harnesses.openclaw.native import REPORT, read_native
from tests.harnesses.openclaw_stores import Session, accepted, assistant, done_run, write_stores

ROOT, CHILD = "agent:main:main", "agent:main:subagent:c1"
ANNOUNCE = f"announce:v1:{CHILD}:run-c1"


def _native(tmp_path: Path) -> Path:
    return tmp_path / "native"


def _report(native: Path, **fields: object) -> None:
    (native / REPORT).write_text(
        json.dumps({"schema": "roller.openclaw-launch/v1", "drain": "drained", **fields})
    )


def _one_child(
    tmp_path: Path, delivery: str = "delivered", compressed: frozenset[int] = frozenset()
) -> Path:
    native = _native(tmp_path)
    root = Session(ROOT, "s-root", events=[
        assistant("e1", "chatcmpl-1", "run-root", [("call_x_1", "sessions_spawn")]),
        accepted("e2", "call_x_1", CHILD, "run-c1"),
        assistant("e3", "chatcmpl-2", "run-root"),
        assistant("e4", "chatcmpl-4", ANNOUNCE),
        assistant("e5", "chatcmpl-5", ANNOUNCE),
    ], compressed=set(compressed))  # fmt: skip
    child = Session(CHILD, "s-c1", parent=ROOT, events=[assistant("c1", "chatcmpl-3", "run-c1")])
    write_stores(
        native / "openclaw", [root, child], runs=[done_run("run-c1", CHILD, ROOT, delivery)]
    )
    _report(native)
    return native


def test_a_child_its_spawn_and_its_announce_run(tmp_path: Path) -> None:
    native = read_native(_one_child(tmp_path))
    assert not native.problems
    assert {p.key: (p.role, p.parent_key) for p in native.participants} == {
        ROOT: ("root", None),
        CHILD: ("child", ROOT),
    }
    assert native.identity.keys == {
        "chatcmpl-1": (ROOT,), "chatcmpl-2": (ROOT,), "chatcmpl-4": (ROOT,),
        "chatcmpl-5": (ROOT,), "chatcmpl-3": (CHILD,),
    }  # fmt: skip
    assert native.call_native_ids["chatcmpl-4"] == {"run_id": ANNOUNCE, "notification_id": ANNOUNCE}
    assert native.call_native_ids["chatcmpl-2"] == {"run_id": "run-root"}
    kinds = [
        (r.type, r.tool_call_id, r.source_response_id, r.target_response_id)
        for r in native.relations
    ]
    assert kinds == [
        ("spawn", "call_x_1", "chatcmpl-1", None),
        ("launch_acknowledged", "call_x_1", "chatcmpl-1", None),
        ("child_completed", "call_x_1", None, None),
        # the first call of the announce run got the notification, the next carries it
        ("result_delivered", None, None, "chatcmpl-4"),
        ("result_in_context", None, None, "chatcmpl-5"),
    ]
    delivered = [r for r in native.relations if r.target_response_id]
    assert all(r.delivered_text == "done" and not r.carried_forward for r in delivered)
    assert native.replayed_tool_ids == {"call_x_1": "callx1"}
    assert native.lifecycle.status == "complete"


def test_a_compressed_event_is_read_and_a_damaged_one_is_a_problem(tmp_path: Path) -> None:
    native_dir = _one_child(tmp_path, compressed=frozenset({1}))
    assert [r.type for r in read_native(native_dir).relations][:2] == [
        "spawn",
        "launch_acknowledged",
    ]
    db = native_dir / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("UPDATE transcript_events SET event_zstd = x'28b52ffd00deadbeef' WHERE seq = 1")
    native = read_native(native_dir)
    assert [p.code for p in native.problems] == ["undecodable_record"]
    assert "spawn" not in [r.type for r in native.relations]  # the acceptance is unreadable


def test_a_fork_copy_never_attributes_the_parent_call_to_the_child(tmp_path: Path) -> None:
    native_dir = _native(tmp_path)
    spawn = assistant("e1", "chatcmpl-1", "run-root", [("call_f", "sessions_spawn")])
    root = Session(ROOT, "s-root", events=[spawn, accepted("e2", "call_f", CHILD, "run-c1")])
    copied = Session(CHILD, "s-c1", parent=ROOT, fork_source="s-root",
                     events=[spawn, assistant("c1", "chatcmpl-3", "run-c1")])  # fmt: skip
    write_stores(native_dir / "openclaw", [root, copied], runs=[done_run("run-c1", CHILD, ROOT)])
    _report(native_dir)
    assert read_native(native_dir).identity.keys["chatcmpl-1"] == (ROOT,)
    # the parent's original unreadable: the copy must not stand in for it
    db = native_dir / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as con:
        con.execute(
            "UPDATE transcript_events SET event_json = '{not json' "
            "WHERE session_id = 's-root' AND seq = 0"
        )
    native = read_native(native_dir)
    assert "chatcmpl-1" not in native.identity.keys
    assert "chatcmpl-3" not in native.identity.keys  # the child's own cannot be told apart
    assert {p.code for p in native.problems} == {"not_json", "missing_record"}


def test_an_unreadable_store_leaves_everything_unknown(tmp_path: Path) -> None:
    native_dir = _one_child(tmp_path)
    db = native_dir / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    native = read_native(native_dir)
    assert native.identity.keys == {}
    assert native.participants == ()
    assert native.lifecycle.status == "unknown"
    assert [p.code for p in native.problems] == ["unreadable_file"]


def test_a_child_whose_notification_is_pending_leaves_the_run_pending(tmp_path: Path) -> None:
    native_dir = _one_child(tmp_path, delivery="pending")
    native = read_native(native_dir)
    assert native.lifecycle.status == "pending"
    assert native.lifecycle.pending_keys == (CHILD,)


def test_stores_that_owe_work_after_a_drained_wait_are_a_drain_problem(tmp_path: Path) -> None:
    """The launcher's wait and the copies taken after the Gateway stopped disagree: the
    capture says so instead of passing for drained."""
    native_dir = _one_child(tmp_path, delivery="pending")  # the report says drained
    problems = [p for p in read_native(native_dir).problems if p.code == "not_drained"]
    assert [p.message for p in problems] == [
        "the launcher saw the run drained, but the stores taken after the Gateway stopped "
        f"still owe work ({CHILD})"
    ]


def test_a_delivery_that_failed_or_a_wait_given_up_is_a_drain_problem(tmp_path: Path) -> None:
    native_dir = _one_child(tmp_path, delivery="failed")
    _report(native_dir, drain="timeout", pending_children=[CHILD])
    problems = [p for p in read_native(native_dir).problems if p.code == "not_drained"]
    assert len(problems) == 2
    assert "stopped waiting" in problems[0].message and "ended failed" in problems[1].message


def test_ids_that_would_collide_when_rewritten_are_not_mapped(tmp_path: Path) -> None:
    native_dir = _native(tmp_path)
    root = Session(
        ROOT,
        "s-root",
        events=[
            assistant(
                "e1", "r1", "run", [("call_a_1", "exec"), ("call_a1", "exec"), ("call_b", "exec")]
            )
        ],
    )
    write_stores(native_dir / "openclaw", [root])
    _report(native_dir)
    native = read_native(native_dir)
    assert native.replayed_tool_ids == {"call_b": "callb"}
    assert [p.code for p in native.problems] == ["duplicate_id"]


def test_responses_keeps_its_ids_and_names_both_halves(tmp_path: Path) -> None:
    native_dir = _native(tmp_path)
    root = Session(ROOT, "s-root", events=[
        assistant("e1", "r1", "run", [("call_1|fc_1", "sessions_spawn")], api="openai-responses"),
        accepted("e2", "call_1|fc_1", CHILD, "run-c1"),
    ])  # fmt: skip
    child = Session(CHILD, "s-c1", parent=ROOT, events=[assistant("c1", "r2", "run-c1")])
    write_stores(native_dir / "openclaw", [root, child], runs=[done_run("run-c1", CHILD, ROOT)])
    _report(native_dir)
    native = read_native(native_dir)
    assert native.replayed_tool_ids == {}
    spawn = native.relations[0]
    assert (spawn.type, spawn.model_tool_ref) == ("spawn", ("call_1", "fc_1"))

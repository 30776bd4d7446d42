"""Native-log text no record can hold (a lone surrogate escape, which `json.loads` reads)
is shown with U+FFFD and recorded as a `text_not_unicode` capture error; the capture is
published, validates, and keeps raw/native/ with the exact bytes. Before `held_native`,
finalize raised `PydanticSerializationError` and the attempt could never be published."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harnesses.claude_code_fixtures import attempt_dir

from roller.capture.integrity import validate_attempt
from roller.finalize.attempt import finalize_attempt
from roller.harnesses.native_capture import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeRelation,
    held_native,
)


def _native(name: str, delivered: str, key: str) -> NativeCapture:
    root = NativeParticipant("main", "root", None, 0, {"session_id": "s1"}, name="main")
    child = NativeParticipant(key, "child", "main", 1, {"agent_id": key}, name=name)
    relation = NativeRelation(
        "spawned", "main", key, "toolu_1", (NativeEvidence("a.jsonl", "u1"),),
        delivered_text=delivered,
    )  # fmt: skip
    return NativeCapture(
        participants=(root, child),
        identity=NativeIdentity("response_id", {"msg_1": ("main",)}),
        relations=(relation,),
        coverage=NativeCoverage("per_message_id", ids={"main": frozenset({"msg_1"})}),
        lifecycle=NativeLifecycle("complete"),
        subtasks="supported",
    )


def test_a_capture_without_such_text_is_the_same_object() -> None:
    native = _native("helper", "done", "a1")
    assert held_native(native) is native
    assert held_native(None) is None


def test_lone_surrogates_are_replaced_and_named_once_per_field() -> None:
    held = held_native(_native("help\udc80er", "do\ud800ne", "a\udc801"))
    assert held is not None
    child = held.participants[1]
    assert child.name == "help\ufffder" and child.key == "a\ufffd1"
    assert child.native_ids == {"agent_id": "a\ufffd1"}
    assert held.relations[0].delivered_text == "do\ufffdne"
    assert held.relations[0].child_key == "a\ufffd1"
    (problem,) = held.problems
    assert problem.code == "text_not_unicode"
    fields = problem.message.split(": ", 1)[0]
    assert fields == (
        "participants.key, participants.name, participants.native_ids, "
        "relations.child_key, relations.delivered_text"
    )
    assert held_native(held) is held  # holding twice changes nothing more


def test_a_real_capture_with_such_text_is_published_partial_with_the_bytes_kept(
    tmp_path: Path,
) -> None:
    paths = attempt_dir("parallel", tmp_path)
    metas = sorted(paths.native.rglob("*.meta.json"))
    assert metas
    for meta in metas:  # the subagent type Claude Code 2.1.332 records, as finalize names it
        data = json.loads(meta.read_text())
        data["agentType"] += "\udc80"
        meta.write_text(json.dumps(data))  # writes the escape `\udc80`, as a log could

    manifest = finalize_attempt(paths)

    assert manifest.capture_status == "partial"
    (error,) = manifest.capture_errors
    assert error.code == "text_not_unicode"
    assert error.message.startswith("participants.name: ")
    names = [p.name for p in manifest.participants]
    assert names.count("general-purpose\ufffd") == len(metas)
    assert validate_attempt(paths).ok
    assert manifest.raw_retained and "\\udc80" in metas[0].read_text()  # the exact bytes

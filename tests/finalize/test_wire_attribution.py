"""Finalize without native evidence: participants exist only where the wire names them.

Child-before-parent: a child's request that arrives first still yields the parent
participant its headers name, keyed exactly as the parent's own later requests key it.
A participant is never its own parent. A request with no identity stays unattributed.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.tapes import anthropic_reply, inputs, new_tape, write_exchange

from roller.capture.tape import read_tape
from roller.finalize.pipeline import build_capture

BODY = {"model": "mock-model", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


def _capture(
    tmp_path: Path, harness: str, requests: list[tuple[list[tuple[str, str]], dict[str, str]]]
):  # type: ignore[no-untyped-def]
    with new_tape(tmp_path / "tape") as tape:
        for n, (headers, roller) in enumerate(requests):
            write_exchange(tape, headers, BODY, anthropic_reply(f"msg_{n:04d}"), roller=roller)
    return build_capture(inputs(harness), read_tape(tmp_path / "tape"), None)


def test_child_before_parent_creates_the_parent_it_names(tmp_path: Path) -> None:
    child = ([("x-claude-code-session-id", "sess-1"), ("x-claude-code-agent-id", "a1")], {})
    parent = ([("x-claude-code-session-id", "sess-1")], {})
    cap = _capture(tmp_path, "claude-code", [child, parent])
    parts = {p.participant_id: p for p in cap.manifest.participants}
    assert len(parts) == 2
    child_call, parent_call = cap.calls
    c, p = parts[child_call.participant_id], parts[parent_call.participant_id]
    assert (c.role, c.depth, c.parent_participant_id) == ("child", 1, p.participant_id)
    assert (p.role, p.depth, p.parent_participant_id) == ("root", 0, None)


def test_a_participant_is_never_its_own_parent(tmp_path: Path) -> None:
    own = {"x-roller-session-id": "s", "x-roller-agent-id": "a", "x-roller-parent-agent-id": "a"}
    cap = _capture(tmp_path, "generic", [([], own)])
    (participant,) = [p for p in cap.manifest.participants if p.call_ids]
    assert participant.parent_participant_id != participant.participant_id


def test_no_identity_means_unattributed_not_invented(tmp_path: Path) -> None:
    cap = _capture(tmp_path, "generic", [([], {}), ([("x-session-id", "ses_x")], {})])
    assert [c.identity_status for c in cap.calls] == ["unattributed", "unattributed"]
    assert cap.manifest.participants == []
    assert cap.manifest.capture_status == "partial"


def test_same_inputs_give_identical_records(tmp_path: Path) -> None:
    reqs = [([("x-claude-code-session-id", "sess-1")], {})]
    a = _capture(tmp_path / "a", "claude-code", reqs)
    b = build_capture(inputs("claude-code"), read_tape(tmp_path / "a" / "tape"), None)
    assert a.calls == b.calls and a.relations == b.relations and a.manifest == b.manifest

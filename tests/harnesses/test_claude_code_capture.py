"""Finalize over real Claude Code 2.1.332 recordings: the tape and the native logs of one
run, as collected. Then the same with the native logs corrupted: a changed message id
must give unattributed or ambiguous calls and a partial capture, never a wrong owner."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.finalize.attempt import finalize_attempt

from .claude_code_fixtures import attempt_dir, lines, main_transcript, subagent_files, write_lines


def _finalize(paths: AttemptPaths) -> Capture:
    finalize_attempt(paths)
    assert validate_attempt(paths).ok, validate_attempt(paths).problems
    return read_attempt(paths)


def _owners(capture: Capture) -> dict[str, str | None]:
    """response id -> native key of the participant its call was attributed to."""
    keys = {
        p.participant_id: p.native_ids.get("agent_id", "main")
        for p in capture.manifest.participants
    }
    return {str(c.response_id): keys.get(c.participant_id or "") for c in capture.calls}


def _replace_message_id(path: Path, old: str, new: str) -> None:
    values = lines(path)
    for v in values:
        if v.get("type") == "assistant" and v["message"]["id"] == old:
            v["message"]["id"] = new
    write_lines(path, values)


def test_parallel_background_capture_is_complete(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("parallel", tmp_path))
    m = capture.manifest
    assert (m.execution_status, m.capture_status, m.lifecycle.status) == (
        "completed",
        "complete",
        "complete",
    )
    assert m.coverage.ok and m.coverage.expected == len(capture.calls) == 5
    assert all(c.identity_status == "attributed" for c in capture.calls)
    assert all(c.attribution.cross_check == "agree" for c in capture.calls)
    roles = Counter(p.role for p in m.participants)
    assert roles == {"root": 1, "child": 2}
    kinds = Counter(r.type for r in capture.relations if r.status == "established")
    assert all(r.status == "established" for r in capture.relations)
    assert kinds["spawn"] == kinds["launch_acknowledged"] == kinds["result_delivered"] == 2
    assert kinds["child_completed"] == 2
    # The notification answer: both results enter the same later root call, bound by text.
    delivered = [r for r in capture.relations if r.type == "result_delivered"]
    (target,) = {r.target_call_id for r in delivered}
    by_id = {c.call_id: c for c in capture.calls}
    body = json.dumps(by_id[str(target)].context)
    for r in delivered:
        assert f"<tool-use-id>{r.tool_call_id}</tool-use-id>" in body
        assert r.source_call_id is not None
        emitted = by_id[r.source_call_id].tool_refs.emitted
        assert r.tool_call_id in {t.id for t in emitted}
    in_context = [r for r in capture.relations if r.type == "result_in_context"]
    assert {(r.tool_call_id, r.target_call_id) for r in in_context} >= {
        (r.tool_call_id, target) for r in delivered
    }
    assert kinds["launch_ack_in_context"] >= 2


def test_background_grandchild_result_reaches_the_root(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("nested-background", tmp_path))
    assert capture.manifest.capture_status == "complete"
    parts = {p.participant_id: p for p in capture.manifest.participants}
    grandchild = next(p for p in parts.values() if p.depth == 2)
    root = next(p for p in parts.values() if p.role == "root")
    (delivered,) = [
        r
        for r in capture.relations
        if r.type == "result_delivered" and r.child_participant_id == grandchild.participant_id
    ]
    assert delivered.status == "established"
    assert delivered.parent_participant_id == root.participant_id
    calls = {c.call_id: c for c in capture.calls}
    source = calls[str(delivered.source_call_id)]
    target = calls[str(delivered.target_call_id)]
    assert source.participant_id == grandchild.parent_participant_id  # the child spawned it
    assert target.participant_id == root.participant_id  # the root received it


def test_a_harness_stopped_with_a_child_running_is_pending_and_partial(tmp_path: Path) -> None:
    capture = _finalize(attempt_dir("killed-child", tmp_path))
    m = capture.manifest
    assert m.execution_status == "interrupted"  # roller's timeout stopped it
    assert m.lifecycle.status == "pending"
    child = next(p for p in m.participants if p.role == "child")
    assert m.lifecycle.pending_participant_ids == [child.participant_id]
    assert child.state == "running"
    assert m.capture_status == "partial"
    assert all(c.identity_status == "attributed" for c in capture.calls)


def test_one_changed_message_id_is_unattributed_never_misattributed(tmp_path: Path) -> None:
    clean = _finalize(attempt_dir("parallel", tmp_path / "clean"))
    paths = attempt_dir("parallel", tmp_path / "corrupt")
    agents = subagent_files(paths.native)
    victim = sorted(agents)[0]
    (old,) = {ln["message"]["id"] for ln in lines(agents[victim]) if ln.get("type") == "assistant"}
    _replace_message_id(agents[victim], old, "msg_01CorruptedXXXXXXXXXXXX")
    corrupt = _finalize(paths)

    (lost,) = [c for c in corrupt.calls if c.response_id == old]
    assert lost.identity_status == "unattributed" and lost.participant_id is None
    assert lost.export_status == "blocked"
    m = corrupt.manifest
    assert m.capture_status == "partial"
    assert not m.coverage.ok
    assert {e.code for e in m.capture_errors} >= {"unattributed_calls", "coverage_mismatch"}
    before, after = _owners(clean), _owners(corrupt)
    for response_id, owner in after.items():
        assert owner is None or owner == before[response_id]


def test_message_ids_swapped_between_children_are_ambiguous(tmp_path: Path) -> None:
    """Native evidence then contradicts the wire's agent id: neither side is believed."""
    paths = attempt_dir("parallel", tmp_path)
    agents = subagent_files(paths.native)
    a, b = sorted(agents)
    (id_a,) = {ln["message"]["id"] for ln in lines(agents[a]) if ln.get("type") == "assistant"}
    (id_b,) = {ln["message"]["id"] for ln in lines(agents[b]) if ln.get("type") == "assistant"}
    _replace_message_id(agents[a], id_a, id_b)
    _replace_message_id(agents[b], id_b, id_a)
    capture = _finalize(paths)
    swapped = [c for c in capture.calls if c.response_id in (id_a, id_b)]
    assert [c.identity_status for c in swapped] == ["ambiguous", "ambiguous"]
    assert {c.attribution.cross_check for c in swapped} == {"disagree"}
    assert capture.manifest.capture_status == "partial"


def test_a_child_message_id_equal_to_a_root_one_is_ambiguous(tmp_path: Path) -> None:
    paths = attempt_dir("parallel", tmp_path)
    agents = subagent_files(paths.native)
    victim = sorted(agents)[0]
    (old,) = {ln["message"]["id"] for ln in lines(agents[victim]) if ln.get("type") == "assistant"}
    root_id = next(
        ln["message"]["id"]
        for ln in lines(main_transcript(paths.native))
        if ln.get("type") == "assistant"
    )
    _replace_message_id(agents[victim], old, root_id)
    capture = _finalize(paths)
    (shared,) = [c for c in capture.calls if c.response_id == root_id]
    assert shared.identity_status == "ambiguous"
    (lost,) = [c for c in capture.calls if c.response_id == old]
    assert lost.identity_status == "unattributed"
    assert capture.manifest.capture_status == "partial"


def test_a_notification_whose_text_never_reached_the_request_is_unknown(tmp_path: Path) -> None:
    paths = attempt_dir("parallel", tmp_path)
    main = main_transcript(paths.native)
    main.write_text(main.read_text().replace("<result>done</result>", "<result>forged</result>"))
    capture = _finalize(paths)
    delivered = [r for r in capture.relations if r.type == "result_delivered"]
    assert {r.status for r in delivered} == {"unknown"}
    assert all("not in that call's actual request" in (r.note or "") for r in delivered)
    assert capture.manifest.capture_status == "partial"

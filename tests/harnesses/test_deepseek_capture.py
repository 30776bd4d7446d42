"""Finalize over real DeepSeek Harness 0.2.1rc2 runs (tape + session logs + roller's driver
record), and over the same runs with the native logs damaged.

Every call names its agent (`x-deepseek-harness-session-id`), which must have a session
log; delegations come from the parent's log (spawn result, catalog, the child's notice)
and the notice's delivery is bound to the request that carried it by its run id.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from roller.harnesses.registry import registry

from .fixture_capture import finalize_fixture, native_copy

# fixture -> (children, max depth, subtasks)
FIXTURES = {
    "minimal-plain": (0, 0, "not_available_in_bundled_profile"),
    "minimal-tool-error": (0, 0, "not_available_in_bundled_profile"),
    "sdk-single": (1, 1, "supported"),
    "sdk-parallel": (2, 1, "supported"),
    "sdk-nested": (2, 2, "supported"),
    "sdk-fork": (1, 1, "supported"),
}
DELEGATION = (
    "spawn",
    "launch_acknowledged",
    "launch_ack_in_context",
    "child_completed",
    "result_delivered",
    "result_in_context",
)


def _log(native: Path, session: str) -> Path:
    (path,) = native.glob(f"sessions/*/{session}/session.v4.jsonl")
    return path


@pytest.mark.parametrize("name", FIXTURES)
def test_every_call_is_its_own_agents(name: str, tmp_path: Path) -> None:
    children, depth, subtasks = FIXTURES[name]
    capture = finalize_fixture("deepseek", name, tmp_path)
    m = capture.manifest
    assert m.capture_status == "complete", m.capture_errors
    assert m.lifecycle is not None and m.lifecycle.status == "complete"
    assert m.capabilities.subtasks == subtasks
    assert m.capabilities.native_output_coverage == "per_session_count_and_tool_call_ids"
    assert m.coverage.checked and m.coverage.ok
    assert sum(1 for p in m.participants if p.role == "child") == children
    assert max(p.depth for p in m.participants) == depth
    by_id = {p.participant_id: p for p in m.participants}
    for call in capture.calls:
        assert call.protocol == "anthropic-messages"
        assert call.identity_status == "attributed" and call.export_status == "exportable"
        session = call.native_identity["x-deepseek-harness-session-id"]
        assert by_id[call.participant_id or ""].native_ids["session_id"] == session
        # the harness's own request id: its session and the log position it carried
        assert call.native_identity["run_id"] == (
            f"{session}:{call.context['dsh_session_log']['throughSeq']}"
        )
        # harness-private body fields stay in the capture as sent
        assert {"dsh_session_log", "dsh_plugin_packages"} <= set(call.context)
    assert all(r.status == "established" for r in capture.relations)


def test_the_private_body_fields_are_declared_data() -> None:
    deepseek = registry().get("deepseek")
    assert deepseek is not None
    assert set(deepseek.private_fields) == {"dsh_session_log", "dsh_plugin_packages"}


@pytest.mark.parametrize(("name", "children"), [("sdk-single", 1), ("sdk-parallel", 2)])
def test_each_delegation_shows_launch_completion_and_the_notice(
    name: str, children: int, tmp_path: Path
) -> None:
    capture = finalize_fixture("deepseek", name, tmp_path)
    kinds = Counter(r.type for r in capture.relations)
    for kind in DELEGATION:
        assert kinds[kind] >= children, (kind, kinds)
    calls = {c.call_id: c for c in capture.calls}
    for r in capture.relations:
        if r.type != "result_delivered":
            continue
        target = calls[r.target_call_id or ""]
        assert target.participant_id == r.parent_participant_id
        assert any(e.source.startswith("native:sessions/") for e in r.evidence)
        texts = json.dumps(target.context["messages"])
        assert "finished and will do no further work" in texts


def test_a_forked_child_is_attributed_and_its_copied_prefix_marked(tmp_path: Path) -> None:
    capture = finalize_fixture("deepseek", "sdk-fork", tmp_path)
    root, child = sorted(capture.manifest.participants, key=lambda p: p.depth)
    inherited = child.inherited_context
    assert inherited is not None
    assert inherited.from_participant_id == root.participant_id
    assert inherited.items == 2 and inherited.checked, inherited.note
    first = next(c for c in capture.calls if c.call_id == child.call_ids[0])
    assert first.participant_id == child.participant_id
    assert first.context["dsh_session_log"]["session"]["seedLength"] > 0
    # the copy is the root's first turn, resent as sent; the child's own prompt follows
    copied = first.context["messages"][: inherited.items]
    root_turn_2 = next(
        c for c in capture.calls if c.participant_id == root.participant_id and c.sequence > 0
    )
    assert copied == root_turn_2.context["messages"][: inherited.items]
    assert "ROLLER-SUBTASK" in json.dumps(first.context["messages"][inherited.items :])
    assert root.inherited_context is None


def test_a_fork_whose_copy_does_not_match_the_wire_is_recorded_unchecked(tmp_path: Path) -> None:
    native = native_copy("deepseek", "sdk-fork", tmp_path)
    whole = finalize_fixture("deepseek", "sdk-fork", tmp_path / "whole")
    child = next(p for p in whole.manifest.participants if p.role == "child")
    log = _log(native, child.native_ids["session_id"])
    lines = log.read_text().splitlines()
    # one more copied message than the wire shows: a seeded user message after the copied
    # assistant reply, just before the end of the seed
    end = next(i for i, x in enumerate(lines) if '"session/end-seed"' in x)
    extra = json.dumps({"type": "user/message", "seq": 16, "data": {"content": []}})
    log.write_text("\n".join([*lines[:end], extra, *lines[end:]]) + "\n")
    capture = finalize_fixture("deepseek", "sdk-fork", tmp_path, native_dir=native)
    forked = next(p for p in capture.manifest.participants if p.role == "child")
    assert forked.inherited_context is not None and not forked.inherited_context.checked
    assert forked.participant_id == child.participant_id


def test_sdk_minimal_declares_subtasks_unavailable(tmp_path: Path) -> None:
    capture = finalize_fixture("deepseek", "minimal-plain", tmp_path)
    assert capture.manifest.capabilities.subtasks == "not_available_in_bundled_profile"
    assert any("profile sdk-minimal" in n for n in capture.manifest.capabilities.notes)


def test_a_garbled_child_log_leaves_its_calls_unattributed_never_the_parents(
    tmp_path: Path,
) -> None:
    whole = finalize_fixture("deepseek", "sdk-single", tmp_path / "whole")
    child = next(p for p in whole.manifest.participants if p.role == "child")
    native = native_copy("deepseek", "sdk-single", tmp_path)
    _log(native, child.native_ids["session_id"]).write_text("not json\n")
    capture = finalize_fixture("deepseek", "sdk-single", tmp_path, native_dir=native)
    assert capture.manifest.capture_status == "partial"
    (root,) = capture.manifest.participants
    for call in capture.calls:
        if call.native_identity["x-deepseek-harness-session-id"] == child.native_ids["session_id"]:
            assert call.participant_id is None and call.identity_status == "unattributed"
        else:
            assert call.participant_id == root.participant_id
    assert not [r for r in capture.relations if r.status == "established" and r.type == "spawn"]


def test_without_the_driver_record_the_lifecycle_is_unknown(tmp_path: Path) -> None:
    native = native_copy("deepseek", "sdk-single", tmp_path)
    (native / "roller" / "driver.jsonl").unlink()
    capture = finalize_fixture("deepseek", "sdk-single", tmp_path, native_dir=native)
    m = capture.manifest
    assert m.lifecycle is not None and m.lifecycle.status == "unknown"
    assert m.capture_status == "partial"
    assert m.capabilities.subtasks == "unknown"


def test_a_driver_that_ran_out_of_time_leaves_the_child_pending(tmp_path: Path) -> None:
    native = native_copy("deepseek", "sdk-single", tmp_path)
    record = native / "roller" / "driver.jsonl"
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    child = next(x["childSessionId"] for x in lines if x["event"] == "subagent.started")
    kept = [x for x in lines if x["event"] in ("driver.started", "subagent.started")]
    kept.append({"event": "settled", "outcome": "timeout", "pending": [child]})
    record.write_text("".join(json.dumps(x) + "\n" for x in kept))
    capture = finalize_fixture("deepseek", "sdk-single", tmp_path, native_dir=native)
    m = capture.manifest
    assert m.lifecycle is not None and m.lifecycle.status == "pending"
    assert len(m.lifecycle.pending_participant_ids) == 1
    assert m.capture_status == "partial"


def test_a_notice_whose_run_id_binds_no_call_gives_no_result_in_context(tmp_path: Path) -> None:
    """The notice text is in the parent's later request, but the request the native log
    says carried it is not on the tape: the text alone proves nothing."""
    native = native_copy("deepseek", "sdk-single", tmp_path)
    log = _log(native, "roller-root")
    events = [json.loads(x) for x in log.read_text().splitlines()]
    notice = next(
        e["seq"]
        for e in events
        if e.get("type") == "user/message"
        and (e.get("data") or {}).get("source", {}).get("kind") == "subagent-settled"
    )
    for e in events:
        accepted = e.get("type") == "session-log-deepseek/delivery-accepted"
        if accepted and e["data"]["throughSeq"] >= notice:
            e["data"]["throughSeq"] += 1000  # a request no captured call carried
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    capture = finalize_fixture("deepseek", "sdk-single", tmp_path, native_dir=native)
    delivered = [r for r in capture.relations if r.type == "result_delivered"]
    assert delivered and all(r.status == "unknown" for r in delivered)
    assert not [r for r in capture.relations if r.type == "result_in_context"]
    assert capture.manifest.capture_status == "partial"

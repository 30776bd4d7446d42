"""Finalize over real Hermes Agent 0.19.0 runs (tape + state.db + roller's plugin record),
and over the same runs with the native store damaged.

Every generation call names its agent through roller's plugin header, which must be a
`state.db` session; children, their parents and the delegating tool call come from the
store and the plugin's record. A damaged store must leave calls unattributed or the
capture partial, and never charge a child's call to another agent.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from roller.finalize.assemble import FinalizedCapture

from .fixture_capture import finalize_fixture, native_copy

FIXTURES = {
    "chat-single": ("openai-chat-completions", 1, 1),
    "chat-batched": ("openai-chat-completions", 2, 1),
    "chat-nested": ("openai-chat-completions", 2, 2),
    "responses-parallel": ("openai-responses", 2, 1),
    "anthropic-tool-error": ("anthropic-messages", 0, 0),
}


def _children(capture: FinalizedCapture) -> list[str]:
    return [p.participant_id for p in capture.manifest.participants if p.role == "child"]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_generation_call_is_its_own_agents(name: str, tmp_path: Path) -> None:
    protocol, children, depth = FIXTURES[name]
    capture = finalize_fixture("hermes", name, tmp_path)
    m = capture.manifest
    assert m.capture_status == "complete", m.capture_errors
    assert m.lifecycle is not None and m.lifecycle.status == "complete"
    assert m.capabilities.subtasks == "supported"
    assert m.capabilities.native_output_coverage == "per_session_count_and_tool_call_ids"
    assert m.coverage.checked and m.coverage.ok and m.coverage.expected > 0
    assert len(_children(capture)) == children
    assert max(p.depth for p in m.participants) == depth
    by_id = {p.participant_id: p for p in m.participants}
    for call in capture.calls:
        if call.kind != "generation":
            continue
        assert call.protocol == protocol
        assert call.identity_status == "attributed"
        assert call.export_status == "exportable"
        header = call.native_identity["x-roller-hermes-session-id"]
        assert by_id[call.participant_id or ""].native_ids["session_id"] == header
        # roller's header never reaches the upstream or the recorded headers
        assert all(not k.lower().startswith("x-roller-") for k, _ in call.request.headers)
    assert all(r.status == "established" for r in capture.relations)


@pytest.mark.parametrize("name", FIXTURES)
def test_side_requests_are_recorded_unattributed_and_complete(name: str, tmp_path: Path) -> None:
    """Hermes's local-server probe (`GET /api/v1/models`, no plugin header) is a model_list
    side call: kept, never charged to an agent, never exported, not a partial record."""
    capture = finalize_fixture("hermes", name, tmp_path)
    side = [c for c in capture.calls if c.kind != "generation"]
    assert side, "Hermes probes the local endpoint on every run"
    for call in side:
        assert call.kind == "model_list"
        assert call.participant_id is None and call.identity_status == "unattributed"
        assert call.export_status == "blocked" and "not_a_generation" in call.export_blocked_by
        assert call.capture_status == "complete"


def test_one_batched_delegation_gives_two_children_spawned_by_one_tool_call(
    tmp_path: Path,
) -> None:
    capture = finalize_fixture("hermes", "chat-batched", tmp_path)
    children = _children(capture)
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert len(spawns) == 2
    assert {r.child_participant_id for r in spawns} == set(children)
    (tool_call,) = {r.tool_call_id for r in spawns}
    (source,) = {r.source_call_id for r in spawns}
    root_calls = [c for c in capture.calls if c.call_id == source]
    assert [t.id for t in root_calls[0].tool_refs.emitted] == [tool_call]
    by_id = {p.participant_id: p for p in capture.manifest.participants}
    for child in children:
        calls = by_id[child].call_ids
        assert calls, f"{child} has calls of its own"
        assert not set(calls) & {
            c for other in children if other != child for c in by_id[other].call_ids
        }
    kinds = Counter((r.type, r.child_participant_id) for r in capture.relations)
    for child in children:
        for kind in ("result_delivered", "child_completed", "result_in_context"):
            assert kinds[(kind, child)] == 1, (kind, child)


def test_responses_spawns_check_both_halves_of_the_tool_reference(tmp_path: Path) -> None:
    capture = finalize_fixture("hermes", "responses-parallel", tmp_path)
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert len(spawns) == 2
    for r in spawns:
        assert r.model_tool_ref is not None and r.model_tool_ref.matched
        assert r.tool_call_id == f"{r.model_tool_ref.call_id}|{r.model_tool_ref.item_id}"


def _damaged_db(tmp_path: Path, name: str, sql: str) -> Path:
    native = native_copy("hermes", name, tmp_path)
    with sqlite3.connect(native / "state.db") as db:
        db.execute(sql)
    return native


def test_an_unreadable_store_attributes_nothing(tmp_path: Path) -> None:
    native = native_copy("hermes", "chat-batched", tmp_path)
    (native / "state.db").write_bytes(b"not a database")
    capture = finalize_fixture("hermes", "chat-batched", tmp_path, native_dir=native)
    assert capture.manifest.capture_status == "partial"
    assert all(c.participant_id is None for c in capture.calls)
    assert all(c.identity_status == "unattributed" for c in capture.calls)
    codes = {e.code for e in capture.manifest.capture_errors}
    assert {"native_log_problem", "unattributed_calls"} <= codes


def test_a_child_missing_from_the_store_is_unattributed_never_the_root(tmp_path: Path) -> None:
    whole = finalize_fixture("hermes", "chat-single", tmp_path / "whole")
    (child,) = [p for p in whole.manifest.participants if p.role == "child"]
    sid = child.native_ids["session_id"]
    native = _damaged_db(tmp_path, "chat-single", f"DELETE FROM sessions WHERE id = '{sid}'")
    capture = finalize_fixture("hermes", "chat-single", tmp_path, native_dir=native)
    assert capture.manifest.capture_status == "partial"
    (root,) = capture.manifest.participants
    for call in capture.calls:
        if call.native_identity.get("x-roller-hermes-session-id") == sid:
            assert call.participant_id is None and call.identity_status == "unattributed"
        elif call.participant_id is not None:
            assert call.participant_id == root.participant_id


def test_without_roller_s_delegation_record_the_spawn_is_unknown(tmp_path: Path) -> None:
    native = native_copy("hermes", "chat-batched", tmp_path)
    (native / "roller" / "delegations.jsonl").unlink()
    capture = finalize_fixture("hermes", "chat-batched", tmp_path, native_dir=native)
    assert capture.manifest.capture_status == "partial"
    # the children are still the store's, each with its own calls, never merged
    assert len(_children(capture)) == 2
    assert not [r for r in capture.relations if r.type == "spawn"]
    errors = " ".join(e.message for e in capture.manifest.capture_errors)
    assert "no line in roller's delegation record" in errors


def test_a_parent_link_that_disagrees_is_a_problem(tmp_path: Path) -> None:
    native = _damaged_db(
        tmp_path,
        "chat-single",
        "UPDATE sessions SET model_config = json_set(model_config, '$._delegate_from', 'x')"
        " WHERE parent_session_id IS NOT NULL",
    )
    capture = finalize_fixture("hermes", "chat-single", tmp_path, native_dir=native)
    assert capture.manifest.capture_status == "partial"
    errors = " ".join(e.message for e in capture.manifest.capture_errors)
    assert "_delegate_from x is not its parent" in errors


def test_a_stored_tool_call_no_output_carries_is_a_coverage_mismatch(tmp_path: Path) -> None:
    """The count alone would match: the tool-call ids are what tells it apart."""
    call = '[{"id": "call_not_on_the_wire", "function": {"name": "terminal"}}]'
    native = _damaged_db(
        tmp_path,
        "chat-single",
        f"UPDATE messages SET tool_calls = '{call}' WHERE id = "
        "(SELECT max(id) FROM messages WHERE role = 'assistant')",
    )
    capture = finalize_fixture("hermes", "chat-single", tmp_path, native_dir=native)
    m = capture.manifest
    assert m.coverage.checked and not m.coverage.ok
    assert any("call_not_on_the_wire is in no captured output" in p for p in m.coverage.problems)
    assert "coverage_mismatch" in {e.code for e in m.capture_errors}


def test_each_child_records_its_parent_and_its_delegating_call(tmp_path: Path) -> None:
    capture = finalize_fixture("hermes", "chat-batched", tmp_path)
    (root,) = [p for p in capture.manifest.participants if p.role == "root"]
    spawns = {
        r.child_participant_id: r.tool_call_id for r in capture.relations if r.type == "spawn"
    }
    for child in (p for p in capture.manifest.participants if p.role == "child"):
        assert child.native_ids["parent_session_id"] == root.native_ids["session_id"]
        assert child.native_ids["delegate_tool_call_id"] == spawns[child.participant_id]

"""Finalize over real Gemini CLI 0.61.0 runs (tape + native logs): attribution by evidence.

The wire carries no identity at all, so these tests pin down the rule that matters most:
every call is attributed by the response id its telemetry log records — or stays
unattributed — and never by order, time or content. The oracle for "who made this call"
is the mock's own marker (`ROLLER-SUBTASK … id=X`) in the request, matched to the child
whose chat holds the same prompt: a test-only oracle roller itself never uses.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roller.capture.models import AttemptInputs, CallRecord
from roller.capture.tape import TapeReadResult
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for
from roller.harnesses.base import AssignedToolId, NativeCapture

from .fixture_capture import finalize_fixture, inputs_of, native_copy, reordered, tape_of

MARKER = re.compile(r"ROLLER-SUBTASK depth=1 id=(\w+)")


def _first_turn_marker(call: CallRecord) -> str | None:
    """The mock's marker in the request's first user turn: a child's task, never the
    root's (whose later turns carry the markers only inside spawn arguments)."""
    parts = call.context["contents"][0]["parts"]
    found = MARKER.search(" ".join(p.get("text", "") for p in parts))
    return found.group(1) if found else None


def _child_by_marker(native_dir: Path) -> dict[str, str]:
    """marker -> child agent id, from each subagent chat's own first user message."""
    out = {}
    for path in native_dir.glob("tmp/*/chats/*/*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        first_user = next(r for r in lines if r.get("type") == "user")
        found = MARKER.search(first_user["content"][0]["text"])
        assert found is not None
        out[found.group(1)] = lines[0]["sessionId"]
    return out


def _owner_keys(capture: FinalizedCapture) -> dict[str | None, str]:
    """participant id -> native key: the child's agent id, or "root"."""
    return {
        p.participant_id: p.native_ids.get("agent_id", "root")
        for p in capture.manifest.participants
    }


def _by_exchange(capture: FinalizedCapture) -> dict[str, str | None]:
    """exchange id -> the owner's native key (participant ids change with the order)."""
    keys = _owner_keys(capture)
    return {c.exchange_id: keys.get(c.participant_id) for c in capture.calls}


def test_two_concurrent_children_every_call_attributed_by_evidence(tmp_path: Path) -> None:
    native_dir = native_copy("gemini-cli", "parallel", tmp_path)
    capture = finalize_fixture("gemini-cli", "parallel", tmp_path, native_dir)
    oracle = _child_by_marker(native_dir)
    assert sorted(oracle) == ["a", "b"]
    keys = _owner_keys(capture)
    assert capture.manifest.capture_status == "complete", capture.manifest.capture_errors
    assert capture.manifest.coverage.ok and capture.manifest.coverage.basis == "per_response_id"
    assert len(capture.calls) == 7
    for call in capture.calls:
        assert call.identity_status == "attributed"
        assert call.attribution.basis == "native:response_id"
        assert call.attribution.key == call.response_id
        assert call.attribution.wire_participant_key is None  # nothing on the wire
        marker = _first_turn_marker(call)
        expected = oracle[marker] if marker is not None else "root"
        assert keys[call.participant_id] == expected, call.sequence
    # the two children ran at the same time: their calls interleave on the tape
    child_seqs = [
        [c.sequence for c in capture.calls if c.participant_id == p.participant_id]
        for p in capture.manifest.participants
        if p.role == "child"
    ]
    assert len(child_seqs) == 2
    assert min(child_seqs[0]) < max(child_seqs[1]) and min(child_seqs[1]) < max(child_seqs[0])


def test_router_side_calls_are_recorded_classified_and_attributed(tmp_path: Path) -> None:
    capture = finalize_fixture("gemini-cli", "parallel", tmp_path)
    routers = [c for c in capture.calls if c.json_mode]
    assert len(routers) == 3
    assert all(c.kind == "generation" and c.export_status == "exportable" for c in routers)
    assert {c.participant_id for c in routers} == {
        p.participant_id for p in capture.manifest.participants
    }


@dataclass(frozen=True)
class _Parallel:
    inputs: AttemptInputs
    tape: TapeReadResult
    native: NativeCapture
    baseline: dict[str, str | None]


@pytest.fixture(scope="module")
def parallel(tmp_path_factory: pytest.TempPathFactory) -> _Parallel:
    tmp = tmp_path_factory.mktemp("parallel")
    tape = tape_of("gemini-cli", "parallel", tmp)
    native = adapter_for("gemini-cli").read_native(native_copy("gemini-cli", "parallel", tmp))
    assert native is not None
    inputs = inputs_of("gemini-cli", "parallel")
    baseline = _by_exchange(build_capture(inputs, tape, native))
    assert None not in baseline.values()
    return _Parallel(inputs, tape, native, baseline)


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(7)))
def test_attribution_does_not_depend_on_request_order(
    parallel: _Parallel, order: list[int]
) -> None:
    shuffled = build_capture(parallel.inputs, reordered(parallel.tape, order), parallel.native)
    assert _by_exchange(shuffled) == parallel.baseline


def test_attribution_does_not_depend_on_telemetry_record_order(tmp_path: Path) -> None:
    native_dir = native_copy("gemini-cli", "parallel", tmp_path / "n")
    baseline = _by_exchange(finalize_fixture("gemini-cli", "parallel", tmp_path / "a", native_dir))
    path = native_dir / "telemetry.log"
    decoder, text, pos, values = json.JSONDecoder(), path.read_text(), 0, []
    while pos < len(text):
        value, end = decoder.raw_decode(text, pos)
        values.append(value)
        pos = end + 1
    path.write_text("".join(json.dumps(v, indent=2) + "\n" for v in reversed(values)))
    assert (
        _by_exchange(finalize_fixture("gemini-cli", "parallel", tmp_path / "b", native_dir))
        == baseline
    )


def test_a_call_without_its_telemetry_record_stays_unattributed(tmp_path: Path) -> None:
    """Drop each api_response record in turn: exactly that call loses its owner; its
    neighbours (same child, same turn, the call before and after) do not lend theirs."""
    source = native_copy("gemini-cli", "parallel", tmp_path / "src")
    text = (source / "telemetry.log").read_text()
    decoder, pos, values = json.JSONDecoder(), 0, []
    while pos < len(text):
        value, end = decoder.raw_decode(text, pos)
        values.append(value)
        pos = end + 1
    responses = [
        i
        for i, v in enumerate(values)
        if v["attributes"]["event.name"] == "gemini_cli.api_response"
    ]
    full = finalize_fixture("gemini-cli", "parallel", tmp_path / "full", source)
    baseline = {c.response_id: c.participant_id for c in full.calls}
    for n, dropped in enumerate(responses):
        native_dir = tmp_path / f"drop{n}" / "native"
        native_dir.parent.mkdir()
        shutil.copytree(source, native_dir)
        kept = [v for i, v in enumerate(values) if i != dropped]
        (native_dir / "telemetry.log").write_text(
            "".join(json.dumps(v, indent=2) + "\n" for v in kept)
        )
        gone = json.loads(values[dropped]["attributes"]["response_text"])
        gone_id = (gone[0] if isinstance(gone, list) else gone)["responseId"]
        capture = finalize_fixture("gemini-cli", "parallel", tmp_path / f"drop{n}", native_dir)
        for call in capture.calls:
            if call.response_id == gone_id:
                assert call.identity_status == "unattributed" and call.participant_id is None
                assert call.attribution.note == f"no native record carries response id {gone_id}"
            else:
                assert call.participant_id == baseline[call.response_id]
        assert capture.manifest.capture_status == "partial"


def test_identical_prompts_identical_requests_still_two_children(tmp_path: Path) -> None:
    capture = finalize_fixture("gemini-cli", "identical-prompts", tmp_path)
    assert capture.manifest.capture_status == "complete", capture.manifest.capture_errors
    children = [p.participant_id for p in capture.manifest.participants if p.role == "child"]
    assert len(children) == 2
    child_calls = [c for c in capture.calls if c.participant_id in children]
    # byte-identical requests (same sha256), yet each child owns one of each pair
    by_body: dict[str, set[str | None]] = {}
    for call in child_calls:
        by_body.setdefault(call.context_sha256, set()).add(call.participant_id)
    assert len(by_body) == 2  # the router request and the child's model request
    assert all(owners == set(children) for owners in by_body.values())
    assert all(c.identity_status == "attributed" for c in capture.calls)


def test_relations_bind_the_emitting_and_the_receiving_calls(tmp_path: Path) -> None:
    capture = finalize_fixture("gemini-cli", "parallel", tmp_path)
    assert all(r.status == "established" for r in capture.relations)
    calls = {c.call_id: c for c in capture.calls}
    emitting = [
        c for c in capture.calls if [t.name for t in c.tool_refs.emitted] == ["invoke_agent"] * 2
    ]
    (source,) = emitting
    # the HTTP output names no tool-call id (the real API omits it); the CLI's id stands in
    assert all(t.id is None and t.ref for t in source.tool_refs.emitted)
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert {r.source_call_id for r in spawns} == {source.call_id}
    in_context = [r for r in capture.relations if r.type == "result_in_context"]
    assert {r.tool_call_id for r in in_context} == {r.tool_call_id for r in spawns}
    for rel in in_context:
        target = calls[rel.target_call_id or ""]
        assert target.participant_id == source.participant_id
        assert rel.tool_call_id in {r.id for r in target.tool_refs.results}
        assert rel.child_participant_id == next(
            s.child_participant_id for s in spawns if s.tool_call_id == rel.tool_call_id
        )


def test_a_childs_own_tool_result_enters_its_next_call(tmp_path: Path) -> None:
    capture = finalize_fixture("gemini-cli", "file-sharing", tmp_path)
    assert capture.manifest.capture_status == "complete", capture.manifest.capture_errors
    (child,) = [p for p in capture.manifest.participants if p.role == "child"]
    mine = [
        r
        for r in capture.relations
        if r.type == "result_in_context" and r.parent_participant_id == child.participant_id
    ]
    assert len(mine) == 1 and mine[0].tool_call_id.startswith(child.native_ids["agent_id"] + "#")


def test_killed_run_is_partial_and_the_call_in_flight_unattributed(tmp_path: Path) -> None:
    capture = finalize_fixture("gemini-cli", "killed-child", tmp_path)
    manifest = capture.manifest
    assert manifest.execution_status == "interrupted"
    assert manifest.capture_status == "partial"
    (in_flight,) = [c for c in capture.calls if c.execution_status != "completed"]
    assert in_flight.identity_status == "unattributed" and in_flight.participant_id is None
    assert all(c.identity_status == "attributed" for c in capture.calls if c is not in_flight)
    assert manifest.lifecycle.status == "unknown"
    codes = {e.code for e in manifest.capture_errors}
    assert {"native_log_problem", "unattributed_calls"} <= codes


def test_assigned_ids_that_do_not_fit_the_output_assign_nothing(tmp_path: Path) -> None:
    tape = tape_of("gemini-cli", "parallel", tmp_path)
    native = adapter_for("gemini-cli").read_native(native_copy("gemini-cli", "parallel", tmp_path))
    assert isinstance(native, NativeCapture)
    (rid,) = [k for k, v in native.assigned_tool_ids.items() if v[0].name == "invoke_agent"]
    wrong = {**native.assigned_tool_ids, rid: (AssignedToolId("read_file", "x"),) * 2}
    capture = build_capture(
        inputs_of("gemini-cli", "parallel"), tape, replace(native, assigned_tool_ids=wrong)
    )
    assert any("assigns tool-call ids" in e.message for e in capture.manifest.capture_errors)
    (source,) = [c for c in capture.calls if c.response_id == rid]
    assert all(t.ref is None for t in source.tool_refs.emitted)
    assert {r.status for r in capture.relations if r.type == "spawn"} == {"unknown"}
    assert not [
        r
        for r in capture.relations
        if r.type == "result_in_context"
        and r.parent_participant_id == source.participant_id
        and r.child_participant_id
    ]

"""Finalize over real Codex runs: the recorded tape (HTTP truth) joined to the rollouts.

Each scenario directory holds the proxy's tape and the native logs of one real
`codex exec` run against `roller mock-model`; `build_capture` is the pure core of
`roller finalize`. What is checked here is the join: attribution by the `thread-id` a
request carried, the coverage cross-check, and relations bound to the HTTP output —
including `model_tool_ref`, which needs both the call id and the item id.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from roller.capture.models import AttemptInputs, CallRecord, RelationRecord
from roller.capture.reader import read_json_model
from roller.capture.tape import read_tape
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.pipeline import build_capture
from roller.harnesses.base import NativeCapture
from roller.harnesses.codex.native import read_native
from tests.harnesses.codex_data import (
    DATA,
    copy,
    items,
    native,
    rewrite,
    rollouts,
    root_and_children,
)

SCENARIOS = (
    "v1-single",
    "v2-fork",
    "v1-nested",
    "v1-identical-prompts",
    "v1-no-wait",
    "v2-fork-client-left",
)


def _build(name: str, native_capture: NativeCapture | None = None) -> FinalizedCapture:
    inputs = read_json_model(DATA / name / "attempt.json", AttemptInputs)
    tape = read_tape(DATA / name / "tape")
    assert tape.problems == ()
    return build_capture(inputs, tape, native_capture or read_native(native(name)))


def _header(call: CallRecord, name: str) -> str | None:
    return next((v for k, v in call.request.headers if k.lower() == name), None)


def _owner_keys(built: FinalizedCapture) -> dict[str, str]:
    """participant id -> native key (the thread id)."""
    return {p.participant_id: p.native_ids["thread_id"] for p in built.manifest.participants}


def _of(built: FinalizedCapture, kind: str) -> list[RelationRecord]:
    return [r for r in built.relations if r.type == kind]


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_call_belongs_to_the_thread_its_request_named(name: str) -> None:
    built = _build(name)
    keys = _owner_keys(built)
    threads = set(rollouts(native(name)))
    for call in built.calls:
        assert call.kind == "generation" and call.identity_status == "attributed"
        assert call.participant_id is not None
        assert (
            keys[call.participant_id] == _header(call, "thread-id")
            and _header(call, "thread-id") in threads
        )
        assert call.export_status == "exportable"
    manifest = built.manifest
    assert manifest.capture_status == "complete", manifest.capture_errors
    assert manifest.coverage.checked and manifest.coverage.ok
    assert manifest.coverage.expected == len(built.calls)
    assert manifest.capabilities.native_output_coverage == "token_usage_count"
    assert any("weaker than a per-id check" in n for n in manifest.capabilities.notes)
    assert all(r.status == "established" for r in built.relations), [
        r.note for r in built.relations if r.status != "established"
    ]


@pytest.mark.parametrize("name", ["v1-single", "v2-fork"])
def test_spawn_matches_both_call_id_and_item_id_in_the_parents_output(name: str) -> None:
    built = _build(name)
    (spawn,) = _of(built, "spawn")
    assert spawn.model_tool_ref is not None and spawn.model_tool_ref.matched
    source = next(c for c in built.calls if c.call_id == spawn.source_call_id)
    assert source.participant_id == spawn.parent_participant_id
    assert source.output is not None
    emitted = [
        (item["call_id"], item["id"])
        for item in source.output["output"]
        if item.get("type") == "function_call" and item.get("name") == "spawn_agent"
    ]
    assert emitted == [(spawn.model_tool_ref.call_id, spawn.model_tool_ref.item_id)]
    assert spawn.tool_call_id == f"{emitted[0][0]}|{emitted[0][1]}"


@pytest.mark.parametrize("which", ["call_id", "item_id"])
@pytest.mark.parametrize("name", ["v1-single", "v2-fork"])
def test_only_one_of_call_id_and_item_id_matching_leaves_the_spawn_unknown(
    name: str, which: str
) -> None:
    capture = read_native(native(name))
    relations = []
    for rel in capture.relations:
        if rel.model_tool_ref is not None and rel.type in ("spawn", "launch_acknowledged"):
            call_id, item_id = rel.model_tool_ref
            ref = (call_id, "fc_other") if which == "item_id" else ("call_other", item_id)
            relations.append(dataclasses.replace(rel, model_tool_ref=ref))
        else:
            relations.append(rel)
    built = _build(name, dataclasses.replace(capture, relations=tuple(relations)))
    for kind in ("spawn", "launch_acknowledged"):
        (rel,) = _of(built, kind)
        assert rel.status == "unknown" and rel.source_call_id is None
        assert rel.model_tool_ref is not None and rel.model_tool_ref.matched is False
        assert rel.note == "only one of call_id / item_id matches the HTTP output"
    assert built.manifest.capture_status == "partial"
    assert "relations_unknown" in {e.code for e in built.manifest.capture_errors}


def test_v2_warm_fork_prefix_is_recorded_as_sent_and_is_the_childs_call() -> None:
    built = _build("v2-fork")
    root, (child,) = root_and_children(native("v2-fork"))
    keys = _owner_keys(built)
    (child_call,) = [c for c in built.calls if keys[c.participant_id or ""] == child]
    assert (
        json.loads(_header(child_call, "x-codex-turn-metadata") or "{}")["history_initialization"]
        == "warm_fork"
    )
    # the parent's history, copied into the child's request exactly as sent
    (spawn,) = _of(built, "spawn")
    assert spawn.model_tool_ref is not None
    context_items = child_call.context["input"]
    copied = [
        i
        for i in context_items
        if i.get("type") == "function_call"
        and (i["call_id"], i["id"]) == (spawn.model_tool_ref.call_id, spawn.model_tool_ref.item_id)
    ]
    assert len(copied) == 1
    (parent_first,) = [c for c in built.calls if c.call_id == spawn.source_call_id]
    parent_items = parent_first.context["input"]
    # item 0 is each thread's own base-instructions message (same text, its own id);
    # the parent's history follows verbatim, then the spawn call the parent's output made
    assert context_items[0]["content"] == parent_items[0]["content"]
    assert context_items[1 : len(parent_items)] == parent_items[1:]
    assert context_items[len(parent_items)] == copied[0]
    # ... and carries the parent's spawn result, yet nothing charges the call to the parent
    assert spawn.model_tool_ref.call_id in {r.id for r in child_call.tool_refs.results}
    root_ids = {pid for pid, key in keys.items() if key == root}
    assert child_call.participant_id not in root_ids
    parent_calls = next(p for p in built.manifest.participants if p.participant_id in root_ids)
    assert child_call.call_id not in parent_calls.call_ids
    for rel in built.relations:
        if child_call.call_id in (rel.source_call_id, rel.target_call_id):
            pytest.fail(f"{rel.type} links the child's call to the parent")


def test_results_enter_the_parent_once_per_call_and_name_the_child() -> None:
    built = _build("v1-single")
    (child_pid,) = [p.participant_id for p in built.manifest.participants if p.role == "child"]
    delivered = _of(built, "result_delivered")
    assert len(delivered) == 2 and all(r.target_call_id for r in delivered)
    in_context = _of(built, "result_in_context")
    triples = [(r.tool_call_id, r.target_call_id) for r in in_context]
    assert len(triples) == len(set(triples)) == 2  # wait output and notification, once each
    assert all(r.child_participant_id == child_pid for r in in_context)
    acks = _of(built, "launch_ack_in_context")  # the spawn output is an acknowledgement
    assert len(acks) == 2 and all(r.child_participant_id == child_pid for r in acks)


def test_a_native_response_id_missing_from_the_calls_fails_coverage(tmp_path: Path) -> None:
    d = copy("v1-single", tmp_path)
    root, _children = root_and_children(d)
    path = rollouts(d)[root]
    first = items(path, "token_usage_record")[0]["payload"]["response_id"]

    def edit(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        for line in lines:
            if line["type"] == "token_usage_record":
                payload = line["payload"]
                if payload["response_id"] == first:  # type: ignore[index]
                    payload["response_id"] = "resp_not_captured"  # type: ignore[index]
        return lines

    rewrite(path, edit)
    built = _build("v1-single", read_native(d))
    coverage = built.manifest.coverage
    assert not coverage.ok  # the count still matches; the id does not
    assert coverage.problems == [f"{root}: native output resp_not_captured has no captured call"]
    assert built.manifest.capture_status == "partial"


def test_dynamic_tools_in_the_root_reach_the_manifest(tmp_path: Path) -> None:
    capture = read_native(native("v1-single"))
    blocked = dataclasses.replace(
        capture, main_trajectory_blocked_by=("dynamic_tools_loaded: x #9 tool_search_output",)
    )
    notes = _build("v1-single", blocked).manifest.capabilities.notes
    assert "main_trajectory_export_blocked: dynamic_tools_loaded: x #9 tool_search_output" in notes
    assert not any("main_trajectory" in n for n in _build("v1-single").manifest.capabilities.notes)


def test_a_child_that_hung_up_after_its_whole_response_made_a_completed_call() -> None:
    """Recorded in an acceptance run: Codex dropped the child's finished stream before the
    chunked terminator, so the proxy saw the client leave; it had every byte."""
    built = _build("v2-fork-client-left")
    (left,) = [c for c in built.calls if c.response.outcome == "client_disconnected"]
    assert (left.execution_status, left.response_capture_status) == ("completed", "complete")
    assert left.export_status == "exportable"
    child = next(p for p in built.manifest.participants if p.role == "child")
    assert left.participant_id == child.participant_id
    assert built.manifest.coverage.ok and built.manifest.capture_status == "complete"

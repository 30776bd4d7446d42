"""The relate stage: native relations bound to calls, context relations derived from calls."""

from __future__ import annotations

from pathlib import Path

from tests.finalize.synthetic import Exchange, decoded, session, tool_use_reply, with_tool_result
from tests.harnesses.fixture_capture import native_copy, tape_of

from roller.finalize.attribute import attribute
from roller.finalize.decode import DecodedCall, decode_exchange
from roller.finalize.ids import capture_ids
from roller.finalize.relate import Related, relate
from roller.harnesses import adapter_for
from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeRelation,
)

SCOPE = "0123456789ab"


def _related(calls: list[DecodedCall], native: NativeCapture | None) -> Related:
    attributed = attribute(calls, native)
    ids = capture_ids(SCOPE, calls, attributed.participants)
    return relate(calls, attributed.owners, ids, native, lambda i: calls[i].texts)


def test_a_result_in_a_later_request_is_a_derived_relation(tmp_path: Path) -> None:
    calls = decoded(
        tmp_path,
        [
            Exchange(reply=tool_use_reply("msg_1", "toolu_1"), roller=session("s1")),
            Exchange(body=with_tool_result("toolu_1"), roller=session("s1")),
        ],
    )
    related = _related(calls, None)
    (rel,) = related.relations
    assert (rel.type, rel.status, rel.tool_call_id) == (
        "result_in_context",
        "established",
        "toolu_1",
    )
    assert (rel.source_call_id, rel.target_call_id) == (
        f"call-{SCOPE}-00000",
        f"call-{SCOPE}-00001",
    )
    assert (
        rel.parent_participant_id == f"agent-{SCOPE}-01" and rel.relation_id == f"rel-{SCOPE}-00001"
    )
    assert related.tool_ids == [("toolu_1",), ()]
    assert related.unknown_messages() == [] and related.tool_id_problems == []


def test_a_result_another_participant_carries_is_not_this_ones(tmp_path: Path) -> None:
    calls = decoded(
        tmp_path,
        [
            Exchange(reply=tool_use_reply("msg_1", "toolu_1"), roller=session("s1")),
            Exchange(body=with_tool_result("toolu_1"), roller=session("s2")),
        ],
    )
    assert _related(calls, None).relations == []


def _native(key: str, relation: NativeRelation) -> NativeCapture:
    return NativeCapture(
        participants=(NativeParticipant(key, "root", None, 0, {"id": key}),),
        identity=NativeIdentity(basis="wire_participant", keys={key: (key,)}),
        relations=(relation,),
        coverage=NativeCoverage(basis="none"),
        lifecycle=NativeLifecycle(status="complete"),
        subtasks="supported",
    )


def test_a_native_relation_that_binds_to_nothing_is_unknown_never_guessed(tmp_path: Path) -> None:
    calls = decoded(
        tmp_path, [Exchange(reply=tool_use_reply("msg_1", "toolu_1"), roller=session("s1"))]
    )
    key = calls[0].identity.participant_key
    assert key is not None
    spawn = NativeRelation(
        type="spawn",
        parent_key=key,
        child_key="ghost",
        tool_call_id="toolu_other",
        evidence=(NativeEvidence("log.jsonl", "7"),),
    )
    related = _related(calls, _native(key, spawn))
    (rel,) = related.relations
    assert rel.status == "unknown" and rel.source_call_id is None
    assert (
        rel.note
        == "child ghost is not a known participant; 0 parent calls emit tool call toolu_other"
    )
    assert [e.source for e in rel.evidence] == ["native:log.jsonl"]
    assert related.unknown_messages() == [
        "1 native relation(s) could not be bound to calls uniquely"
    ]


def test_bound_relations_come_first_then_derived_numbered_in_that_order(tmp_path: Path) -> None:
    """Over a real Claude Code run with two background subagents."""
    native = adapter_for("claude-code").read_native(
        native_copy("claude-code", "parallel", tmp_path)
    )
    assert native is not None and native.relations
    tape = tape_of("claude-code", "parallel", tmp_path)
    calls = [decode_exchange(n, ex, "claude-code") for n, ex in enumerate(tape.exchanges)]
    related = _related(calls, native)
    from_native = [
        any(e.source.startswith("native:") for e in r.evidence) for r in related.relations
    ]
    first_derived = from_native.index(False)
    assert all(from_native[:first_derived]) and not any(from_native[first_derived:])
    # every native relation is bound, in the native order (notification deliveries add
    # the result_in_context relations of the calls they entered right after them)
    bound_types = [
        r.type for r in related.relations[:first_derived] if r.type != "result_in_context"
    ]
    assert bound_types == [r.type for r in native.relations if r.type != "result_in_context"]
    assert all(r.status == "established" for r in related.relations)
    assert [r.relation_id for r in related.relations] == [
        f"rel-{SCOPE}-{n:05d}" for n in range(1, len(related.relations) + 1)
    ]
    # background launches: what enters the spawner's later inputs is the acknowledgement
    assert "launch_ack_in_context" in {r.type for r in related.relations[first_derived:]}

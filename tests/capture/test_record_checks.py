"""A relation's call references: each one that names no call is a problem, in order,
whether the calls are a set or a numbered list (which the check asks fewer times: the
evidence names the source and target again)."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from roller.capture.layout import AttemptPaths
from roller.capture.models import Evidence, RelationRecord
from roller.capture.models.numbered import NumberedIds
from roller.capture.record_checks import check_relation

KNOWN, OTHER, GONE = "call-ab-00001", "call-ab-00002", "call-ab-00009"


def _relation(source: str | None, target: str, evidence: list[str]) -> RelationRecord:
    return RelationRecord(
        schema_="roller.relation/v1",
        relation_id="rel-ab-00001",
        type="result_in_context",
        status="established",
        parent_participant_id=None,
        child_participant_id=None,
        source_call_id=source,
        target_call_id=target,
        tool_call_id="toolu_1",
        model_tool_ref=None,
        evidence=[Evidence(source=e, ref=None, retained=True) for e in evidence],
        note=None,
    )


@pytest.mark.parametrize(
    ("source", "target", "evidence", "unknown"),
    [
        (KNOWN, OTHER, [f"call:{KNOWN}", f"call:{OTHER}"], []),
        (KNOWN, GONE, [f"call:{KNOWN}", f"call:{GONE}"], ["target", "evidence"]),
        (GONE, KNOWN, [f"call:{GONE}", f"call:{GONE}", f"call:{OTHER}"], ["source", "ev", "ev"]),
        (None, KNOWN, [f"call:{GONE}"], ["evidence"]),
    ],
)
def test_each_unknown_call_reference_is_one_problem(
    tmp_path: Path, source: str | None, target: str, evidence: list[str], unknown: list[str]
) -> None:
    paths = AttemptPaths(tmp_path)
    relation = _relation(source, target, evidence)
    numbered = NumberedIds("call-ab-", array("q", [1, 2, 3]), {})
    plain = {KNOWN, OTHER, "call-ab-00003"}
    found = check_relation(paths, set(), numbered, relation)
    assert found == check_relation(paths, set(), plain, relation)
    assert [p.code for p in found] == ["dangling_call"] * len(unknown)
    assert [p.message.split()[0] for p in found] == [{"ev": "evidence"}.get(u, u) for u in unknown]
    assert check_relation(paths, set(), set(), relation) == check_relation(
        paths, set(), NumberedIds("", array("q"), {}), relation
    )


def _variants() -> list[RelationRecord]:
    """Relations around the common one (participants and calls known, evidence naming
    them), each changed in one way that may or may not be a problem."""
    base = _relation(KNOWN, OTHER, [f"call:{KNOWN}", f"call:{OTHER}"])
    tool_ref = {"call_id": "c", "item_id": "i"}
    changes: list[dict[str, object]] = [
        {},
        {"parent_participant_id": "p-1", "child_participant_id": "p-2"},
        {"parent_participant_id": "p-gone"},
        {"child_participant_id": "p-gone"},
        {"source_call_id": None},
        {"target_call_id": None},
        {"source_call_id": GONE},
        {"target_call_id": GONE},
        {"source_call_id": OTHER, "target_call_id": OTHER},
        {"model_tool_ref": {**tool_ref, "matched": False}},
        {"model_tool_ref": {**tool_ref, "matched": False}, "status": "unknown"},
        {"model_tool_ref": {**tool_ref, "matched": True}},
        {"evidence": []},
        {"evidence": [Evidence(source=f"call:{GONE}", ref=None, retained=True)]},
        {"evidence": [Evidence(source="call:call-ab-00003", ref=None, retained=True)]},
        {"evidence": [Evidence(source=f"callx{KNOWN}", ref=None, retained=True)]},
        {"evidence": [Evidence(source="native:gone.jsonl", ref="x", retained=True)]},
        {"evidence": [Evidence(source="native:gone.jsonl", ref="x", retained=False)]},
        {"evidence": [Evidence(source="native:../x", ref=None, retained=True)]},
        {"evidence": [Evidence(source="tape:x1", ref=None, retained=True)]},
    ]
    out = []
    for change in changes:
        record = base.model_dump(by_alias=True) | change
        out.append(RelationRecord.model_validate(record))
    return out


@pytest.mark.parametrize("relation", _variants(), ids=lambda r: "")
def test_the_quick_check_finds_what_the_full_one_finds(
    tmp_path: Path, relation: RelationRecord
) -> None:
    from roller.capture.record_checks import _relation_problems

    paths = AttemptPaths(tmp_path)
    participants = {"p-1", "p-2"}
    for calls in (
        NumberedIds("call-ab-", array("q", [1, 2, 3]), {}),
        {KNOWN, OTHER, "call-ab-00003"},
        set(),
    ):
        full = _relation_problems(paths, participants, calls, relation)
        assert check_relation(paths, participants, calls, relation) == full

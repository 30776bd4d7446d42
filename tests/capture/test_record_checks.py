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

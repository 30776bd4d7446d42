"""Record ids come from the capture scope and recorded order, never a clock."""

from __future__ import annotations

from pathlib import Path

from tests.finalize.synthetic import Exchange, decoded, session

from roller.finalize.attribute import attribute
from roller.finalize.ids import capture_ids


def test_ids_of_calls_participants_and_relations(tmp_path: Path) -> None:
    calls = decoded(tmp_path, [Exchange(roller=session("s2")), Exchange(roller=session("s1"))])
    drafts = attribute(calls, None).participants
    ids = capture_ids("0123456789ab", calls, drafts)
    assert ids.calls == ("call-0123456789ab-00000", "call-0123456789ab-00001")
    # participants numbered in the order attribution lists them: first seen first
    assert list(ids.participants.values()) == ["agent-0123456789ab-01", "agent-0123456789ab-02"]
    assert list(ids.participants) == [d.key for d in drafts]
    first, second = ids.relation_ids(), ids.relation_ids()
    assert [first(), first(), second()] == [
        "rel-0123456789ab-00001",
        "rel-0123456789ab-00002",
        "rel-0123456789ab-00001",  # each numbering starts afresh
    ]

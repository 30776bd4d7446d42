"""A derived relation's line is its record's serialization, byte for byte."""

from __future__ import annotations

import pydantic_core
import pytest

from roller.capture.models import RelationRecord
from roller.capture.writer import serialize
from roller.finalize import derived
from roller.finalize.derived import Derived

ODD = "".join(chr(c) for c in range(0x20)) + '"\\/é\u2028\u2029\ufeff\U0001f600\x7f'


def test_keys_are_the_records_field_order() -> None:
    aliases = tuple(f.alias or name for name, f in RelationRecord.model_fields.items())
    assert aliases == derived._KEYS


@pytest.mark.parametrize(
    "d",
    [
        Derived("result_in_context", "agent-a-01", None, "call-a-00001", "call-a-00002",
                "toolu_1", "toolu_1"),
        Derived("launch_ack_in_context", None, "agent-a-02", "call-a-00001", "call-a-00009",
                "call_x|fc_y", "call_x"),
        Derived("result_in_context", ODD, ODD, ODD, ODD, ODD, ODD),
    ],
)  # fmt: skip
def test_line_is_the_records_serialization(d: Derived) -> None:
    expected = serialize(derived.record(d, "rel-a-00007")).encode() + b"\n"
    assert derived.line(d, "rel-a-00007") == expected


def test_a_lone_surrogate_fails_as_the_record_path_does() -> None:
    d = Derived("result_in_context", None, None, "call-a-1", "call-a-2", "\ud800", "x")
    with pytest.raises(pydantic_core.PydanticSerializationError):
        serialize(derived.record(d, "rel-a-00001"))
    with pytest.raises(pydantic_core.PydanticSerializationError):
        derived.line(d, "rel-a-00001")


def test_a_run_of_lines_from_one_writer_is_each_records_serialization() -> None:
    """`Lines` encodes what a run of relations from one tool call shares once: every line
    of a run, and of the runs around it, is still its own record's serialization."""
    base = Derived("result_in_context", "agent-a-01", None, "call-a-00001", "call-a-00002",
                   "toolu_1", "toolu_1")  # fmt: skip
    run = [
        base,
        base._replace(target_call_id="call-a-00003"),
        base._replace(target_call_id=ODD, target_ref=ODD),
        base._replace(child_participant_id="agent-a-02"),
        base._replace(source_ref="call_x|fc_y", target_ref="call_x"),
        base._replace(type="launch_ack_in_context", target_call_id="call-a-00004"),
        base._replace(source_call_id=ODD),
        base,
    ]
    lines = derived.Lines()
    for n, d in enumerate(run, 1):
        relation_id = f"rel-a-{n:05d}"
        expected = serialize(derived.record(d, relation_id)).encode() + b"\n"
        assert lines.line(d, relation_id) == expected

"""A context relation derived from calls, and its record and line.

A conversation resends every earlier tool result, so derived relations
(`result_in_context`, `launch_ack_in_context`; the scan is `relate.derive_in_context`)
are most of a capture's relations: about thirteen per call in a long one. Each is a
`Derived` (the eight facts that vary), turned into a `RelationRecord` where a record is
asked for (`record`) and straight into its line of relations.jsonl where finalize
streams them (`line`): the same bytes `serialize(record(d, id))` gives, without building
and validating three pydantic models per relation (roller built every value itself).

Facts relied on: orjson and pydantic's serializer write a dict of strings, None and
booleans to the same bytes (compact, keys in insertion order, only `"`, `\\` and control
characters escaped, other text as UTF-8); both refuse a lone surrogate, which `line`
then leaves to the record path, so an error is the record path's too. `_KEYS` is the
record's field order (tests/finalize/test_derived.py checks it against the model).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import orjson

from roller.capture.models import Evidence, RelationRecord, RelationType

SCHEMA: Literal["roller.relation/v1"] = "roller.relation/v1"
_KEYS = (
    "schema",
    "relation_id",
    "type",
    "status",
    "parent_participant_id",
    "child_participant_id",
    "source_call_id",
    "target_call_id",
    "tool_call_id",
    "model_tool_ref",
    "evidence",
    "note",
)


class Derived(NamedTuple):
    """One derived relation: tool call `ref` (`source_ref`) emitted by call `source`,
    its result (carried under `target_ref`) in the input of the later call `target`."""

    type: RelationType
    parent_participant_id: str | None
    child_participant_id: str | None
    source_call_id: str
    target_call_id: str
    source_ref: str
    target_ref: str


def record(d: Derived, relation_id: str) -> RelationRecord:
    return RelationRecord(
        schema_=SCHEMA,
        relation_id=relation_id,
        type=d.type,
        status="established",
        parent_participant_id=d.parent_participant_id,
        child_participant_id=d.child_participant_id,
        source_call_id=d.source_call_id,
        target_call_id=d.target_call_id,
        tool_call_id=d.source_ref,
        model_tool_ref=None,
        evidence=[
            Evidence(source=f"call:{d.source_call_id}", ref=d.source_ref, retained=True),
            Evidence(source=f"call:{d.target_call_id}", ref=d.target_ref, retained=True),
        ],
        note=None,
    )


def line(d: Derived, relation_id: str) -> bytes:
    """`serialize(record(d, relation_id))` as a line (LF-terminated), written directly."""
    values = (
        SCHEMA,
        relation_id,
        d.type,
        "established",
        d.parent_participant_id,
        d.child_participant_id,
        d.source_call_id,
        d.target_call_id,
        d.source_ref,
        None,
        [
            {"source": f"call:{d.source_call_id}", "ref": d.source_ref, "retained": True},
            {"source": f"call:{d.target_call_id}", "ref": d.target_ref, "retained": True},
        ],
        None,
    )
    try:
        return orjson.dumps(dict(zip(_KEYS, values, strict=True)), option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # a lone surrogate: the record path says what it says of it
        return record(d, relation_id).model_dump_json(by_alias=True).encode() + b"\n"

"""Relation records read to be checked: every field as `RelationRecord` reads it, by msgspec.

`checked_relation(line)` is the record `roller validate` checks (and every export, which
validates first) for one relations.jsonl line: a `CheckedRelation` (a msgspec struct
with `RelationRecord`'s fields, names and types) when msgspec reads the line, else
`validate_json(line, RelationRecord)` — so the verdict, and the error when there is one,
is always the full reading's. A long capture holds ~13 relations a call (130,800 at 10k
calls); pydantic read each in ~5.3 µs, msgspec in ~1.5, and nothing a check does with a
relation needs the model (`record_checks.check_relation` reads a `RelationView`, which
both are). `relation_values(relation)` gives either's JSON values as `model_dump(by_alias=True,
mode="json")` does, keys in the model's order: the HTML page's relations
(`roller.view.page`) are read so.

Why msgspec's acceptance is pydantic's (tests/capture/test_relation_check.py checks
it on every fixture's relations and on lines damaged in each JSON way):
- `Record` is strict, forbids extras and every `RelationRecord` field is required:
  `CheckedRelation` is strict (msgspec's default), forbids unknown fields and gives no
  field a default; the literals are the models' own (`RelationType`, `RelationStatus`);
- both refuse what JSON refuses (invalid UTF-8, a lone surrogate escape, a raw control
  character, trailing bytes) and take the last of repeated keys;
- `Record` also takes a field by its name where it has an alias (`schema_`): msgspec
  takes only the alias, so such a line falls to the full reading, which takes it; so
  does an older record's shape, which only the full reading converts.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from roller.capture.models import RelationRecord, RelationStatus, RelationType
from roller.capture.reader import validate_json


class CheckedEvidence(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """`Evidence`, as a check reads it."""

    source: str
    ref: str | None
    retained: bool


class CheckedToolRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """`ModelToolRef`, as a check reads it."""

    call_id: str
    item_id: str
    matched: bool


class CheckedRelation(
    msgspec.Struct, forbid_unknown_fields=True, frozen=True, rename={"schema_": "schema"}
):
    """`RelationRecord`, as a check reads it: its fields in its order, by their aliases."""

    schema_: Literal["roller.relation/v1"]
    relation_id: str
    type: RelationType
    status: RelationStatus
    parent_participant_id: str | None
    child_participant_id: str | None
    source_call_id: str | None
    target_call_id: str | None
    tool_call_id: str | None
    model_tool_ref: CheckedToolRef | None
    evidence: list[CheckedEvidence]
    note: str | None


_DECODE: Final = msgspec.json.Decoder(CheckedRelation).decode


def checked_relation(line: bytes) -> CheckedRelation | RelationRecord:
    """One relations.jsonl line as a check reads it (module docstring): raises what
    `validate_json(line, RelationRecord)` raises."""
    try:
        return _DECODE(line)
    except msgspec.DecodeError:  # (msgspec's ValidationError is one)
        return validate_json(line, RelationRecord)


def relation_values(relation: CheckedRelation | RelationRecord) -> dict[str, Any]:
    """The record's JSON values, keys in its order: what
    `model_dump(by_alias=True, mode="json")` gives (the struct's fields are the model's,
    in its order, by their aliases)."""
    if isinstance(relation, CheckedRelation):
        values: dict[str, Any] = msgspec.to_builtins(relation)
        return values
    return relation.model_dump(by_alias=True, mode="json")

"""roller.capture.relation_check: a relation line read for a check gives the full
reading's verdict.

Every recorded fixture's relation lines, and those lines damaged in each way a line can
be, are read by `checked_relation` and by `validate_json(line, RelationRecord)`: both
accept or both raise, with the same message, and an accepted line gives the same values;
the struct the fast path reads into has the model's fields, names and types; and
`roller validate` reports a damaged or dangling relation as before.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from pydantic import BaseModel, ValidationError

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import Evidence, RelationRecord
from roller.capture.models.relation import ModelToolRef
from roller.capture.reader import validate_json
from roller.capture.record_checks import RelationView
from roller.capture.relation_check import (
    CheckedEvidence,
    CheckedRelation,
    CheckedToolRef,
    checked_relation,
    relation_values,
)
from tests.capture.test_compact_v3 import _published
from tests.finalize.test_fixture_goldens import FIXTURES


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    out: list[bytes] = []
    for harness, name in FIXTURES:
        dest = tmp_path_factory.mktemp(f"{harness}-{name}")
        out += _published(harness, name, dest, "compact/v2").relations.read_bytes().splitlines()
    return out


def _values(relation: RelationView) -> object:
    if isinstance(relation, BaseModel):
        return relation.model_dump(by_alias=True, mode="json")
    return msgspec.to_builtins(relation)


def _verdict(read: Callable[[bytes], RelationView], line: bytes) -> tuple[str, object]:
    try:
        relation = read(line)
    except ValidationError as exc:
        return "invalid", str(exc)
    return "valid", _values(relation)


def _same_verdict(line: bytes) -> str:
    checked = _verdict(checked_relation, line)
    full = _verdict(lambda data: validate_json(data, RelationRecord), line)
    assert checked == full, line[:300]
    return checked[0]


def test_every_fixture_line_reads_as_in_full(lines: list[bytes]) -> None:
    records = [json.loads(line) for line in lines]
    # what the lines cover: a tool reference, native and call evidence, notes, kinds
    assert sum(r["model_tool_ref"] is not None for r in records) > 5
    assert sum(r["note"] is not None for r in records) > 5
    assert any(e["source"].startswith("native:") for r in records for e in r["evidence"])
    assert len({r["type"] for r in records}) >= 5
    assert {_same_verdict(line) for line in lines} == {"valid"}
    # and the fast path read them all: none left to the full reading
    assert all(isinstance(checked_relation(line), CheckedRelation) for line in lines)


def _with_value(line: bytes, field: str, value: bytes) -> bytes:
    """The line with one field's JSON text replaced by `value` (any bytes)."""
    record = json.loads(line)
    record[field] = "\x00placeholder"
    text = json.dumps(record, separators=(",", ":")).encode()
    return text.replace(b'"\\u0000placeholder"', value)


DAMAGED_VALUES = {
    "plain text": b'"rel-x"',
    "escapes": b'"a\\n\\t\\"\\\\\\/\\u0041"',
    "an escaped NUL": b'"\\u0000"',
    "a surrogate pair": b'"\\ud83d\\ude00"',
    "non-ASCII UTF-8": '"åß∂😀"'.encode(),
    "invalid UTF-8": b'"\xff\xfe"',
    "an overlong encoding": b'"\xc0\xaf"',
    "a surrogate in UTF-8": b'"\xed\xa0\x80"',
    "a lone high surrogate": b'"\\ud800"',
    "a lone low surrogate": b'"\\udc00"',
    "a high surrogate, then text": b'"\\ud800x"',
    "a bad escape": b'"\\q"',
    "a short unicode escape": b'"\\u12"',
    "a raw control character": b'"a\x01b"',
    "a raw tab": b'"a\tb"',
    "an unterminated string": b'"abc',
    "a number": b"12",
    "a boolean": b"true",
    "null": b"null",
    "an object": b"{}",
    "nothing": b"",
}


@pytest.mark.parametrize("field", ["relation_id", "parent_participant_id", "note"])
@pytest.mark.parametrize("value", DAMAGED_VALUES.values(), ids=DAMAGED_VALUES.keys())
def test_a_value_is_judged_as_in_full(lines: list[bytes], field: str, value: bytes) -> None:
    _same_verdict(_with_value(lines[0], field, value))


def _edited(line: bytes, edit: str) -> bytes:
    record = json.loads(line)
    evidence = record["evidence"][0]
    if edit == "unknown key":
        record["relations"] = 1
    elif edit == "unknown key in evidence":
        evidence["extra"] = None
    elif edit == "unknown key in the tool reference":
        record["model_tool_ref"] = {"call_id": "c", "item_id": "i", "matched": True, "x": 1}
    elif edit == "a tool reference without matched":
        record["model_tool_ref"] = {"call_id": "c", "item_id": "i"}
    elif edit == "an unmatched tool reference":
        record["model_tool_ref"] = {"call_id": "c", "item_id": "i", "matched": False}
    elif edit == "a field missing":
        del record["note"]
    elif edit == "evidence missing a field":
        del evidence["ref"]
    elif edit == "a field by its name, not its alias":
        record["schema_"] = record.pop("schema")
    elif edit == "both name and alias":
        record["schema_"] = record["schema"]
    elif edit == "another schema":
        record["schema"] = "roller.relation/v2"
    elif edit == "a type not in the vocabulary":
        record["type"] = "sibling"
    elif edit == "a status not in the vocabulary":
        record["status"] = "maybe"
    elif edit == "retained as 1":
        evidence["retained"] = 1
    elif edit == "retained as a string":
        evidence["retained"] = "true"
    elif edit == "evidence as an object":
        record["evidence"] = evidence
    elif edit == "no evidence":
        record["evidence"] = []
    text = json.dumps(record, separators=(",", ":")).encode()
    if edit == "a key repeated, the last differing":
        return text[:-1] + b',"relation_id":"rel-other"}'
    if edit == "a key repeated, the last invalid":
        return text[:-1] + b',"relation_id":7}'
    if edit == "a key repeated in evidence":
        return text.replace(b'"retained":true', b'"retained":true,"retained":false', 1)
    if edit == "a key spelled with an escape":
        return text.replace(b'"note"', b'"\\u006eote"')
    if edit == "trailing garbage":
        return text + b"x"
    if edit == "whitespace around it":
        return b" \t\r" + text + b" \r\n"
    if edit == "a byte order mark":
        return b"\xef\xbb\xbf" + text
    if edit == "not an object":
        return b"[" + text + b"]"
    return text


EDITS = (
    "unknown key",
    "unknown key in evidence",
    "unknown key in the tool reference",
    "a tool reference without matched",
    "an unmatched tool reference",
    "a field missing",
    "evidence missing a field",
    "a field by its name, not its alias",
    "both name and alias",
    "another schema",
    "a type not in the vocabulary",
    "a status not in the vocabulary",
    "retained as 1",
    "retained as a string",
    "evidence as an object",
    "no evidence",
    "a key repeated, the last differing",
    "a key repeated, the last invalid",
    "a key repeated in evidence",
    "a key spelled with an escape",
    "trailing garbage",
    "whitespace around it",
    "a byte order mark",
    "not an object",
)


@pytest.mark.parametrize("edit", EDITS)
def test_a_record_is_judged_as_in_full(lines: list[bytes], edit: str) -> None:
    for line in lines[:: max(1, len(lines) // 8)]:
        _same_verdict(_edited(line, edit))


def test_a_line_only_the_full_reading_takes_is_read_in_full(lines: list[bytes]) -> None:
    # pydantic also takes a field by its name: msgspec refuses the line, the model reads it
    line = _edited(lines[0], "a field by its name, not its alias")
    assert isinstance(checked_relation(line), RelationRecord)
    assert _same_verdict(line) == "valid"


def test_relation_values_are_the_models_dump(lines: list[bytes]) -> None:
    # what the HTML page shows of a relation: the model's dump, keys in its order (the
    # text compared, not only the values), read by msgspec or in full
    taken = [_edited(lines[0], "a field by its name, not its alias"), *lines]
    for line in taken:
        full = validate_json(line, RelationRecord)
        dumped = json.dumps(full.model_dump(by_alias=True, mode="json"))
        assert json.dumps(relation_values(checked_relation(line))) == dumped
        assert json.dumps(relation_values(full)) == dumped


def _fields(cls: type) -> dict[str, object]:
    return dict(typing.get_type_hints(cls))


def test_the_structs_mirror_the_models() -> None:
    # the same keys, in the same order, each of the same type (the nested records by
    # their mirrors): a field added to a model fails here until its struct has it
    pairs = [
        (CheckedRelation, RelationRecord),
        (CheckedEvidence, Evidence),
        (CheckedToolRef, ModelToolRef),
    ]
    mirror = {
        RelationRecord.model_fields["evidence"].annotation: list[CheckedEvidence],
        RelationRecord.model_fields["model_tool_ref"].annotation: CheckedToolRef | None,
    }
    for struct, model in pairs:
        info = msgspec.structs.fields(struct)
        assert [f.encode_name for f in info] == [
            f.alias or name for name, f in model.model_fields.items()
        ]
        assert all(f.required for f in info)
        hints = _fields(struct)
        for name, field in model.model_fields.items():
            assert hints[name] == mirror.get(field.annotation, field.annotation), name
    assert RelationRecord.model_config.get("extra") == "forbid"
    assert RelationRecord.model_config.get("strict") is True


def _validated(paths: AttemptPaths) -> set[str]:
    return {str(p) for p in validate_attempt(AttemptPaths(paths.root)).problems}


def test_validate_reports_relations_as_before(tmp_path: Path) -> None:
    # Through `roller validate`'s own scan: a dangling call and participant, a line that
    # does not parse, each reported as the full reading reported them.
    harness, name = next(f for f in FIXTURES if f[0] == "claude-code")
    paths = _published(harness, name, tmp_path, "compact/v2")
    assert validate_attempt(paths).ok
    original = paths.relations.read_bytes()
    rows = original.splitlines()
    record = json.loads(rows[0])
    record["source_call_id"] = "call-nowhere"
    record["parent_participant_id"] = "p-nowhere"
    rows[0] = json.dumps(record, separators=(",", ":")).encode()
    paths.relations.write_bytes(b"\n".join(rows) + b"\n")
    found = _validated(paths)
    rid = record["relation_id"]
    assert f"dangling_call: relation {rid}: source call call-nowhere is not in calls.jsonl" in found
    assert (
        f"dangling_participant: relation {rid}: parent participant p-nowhere is not in the "
        "manifest" in found
    )
    rows[0] = _with_value(rows[0], "note", b'"\\ud800"')
    paths.relations.write_bytes(b"\n".join(rows) + b"\n")
    invalid = [p for p in validate_attempt(AttemptPaths(paths.root)).problems]
    assert [p.code for p in invalid if p.code == "record_invalid"] == ["record_invalid"]
    message = next(p.message for p in invalid if p.code == "record_invalid")
    assert message.startswith(f"{paths.relations}:1: not a valid RelationRecord: ")

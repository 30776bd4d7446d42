"""manifest.json's per-call lists: written and read as numbers, the same bytes and records
as pydantic's, and the same errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from roller.capture import manifest_json
from roller.capture.models import Manifest
from roller.capture.models.numbered import NumberedEvidence, NumberedIds

SCOPE = "0123456789ab"


def _calls(numbers: list[int]) -> list[str]:
    return [f"call-{SCOPE}-{n:05d}" for n in numbers]


def _evidence(ids: list[str], native: int = 0) -> list[dict[str, Any]]:
    own = [
        {"source": f"native:logs/{i}.jsonl", "ref": f"e{i}", "retained": False}
        for i in range(native)
    ]
    return own + [{"source": f"call:{c}", "ref": None, "retained": True} for c in ids]


def _participant(pid: str, ids: list[str], evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "participant_id": pid,
        "role": "root",
        "parent_participant_id": None,
        "depth": 0,
        "native_ids": {"session_id": 'a "quoted" id'},
        "name": None,
        "state": "completed",
        "call_ids": ids,
        "evidence": evidence,
    }


def manifest_dict(
    participants: list[dict[str, Any]], turns: list[list[str]] | None
) -> dict[str, Any]:
    return {
        "schema": "roller.capture/v1",
        "storage_layout": "compact/v2",
        "capture_scope": SCOPE,
        "harness": {"name": "generic", "version": None, "profile": None},
        "sample_id": "s",
        "attempt": 1,
        "started_at": "2026-12-01T00:00:00.000000Z",
        "ended_at": "2026-12-01T00:00:01.000000Z",
        "exit_code": 0,
        "execution_status": "completed",
        "capture_status": "complete",
        "capture_errors": [{"code": "x", "message": '"call_ids":["call-0123456789ab-00001"]'}],
        "participants": participants,
        "capabilities": {
            "subtasks": "supported",
            "native_output_coverage": "none",
            "notes": [],
            "identity_evidence": None,
        },
        "coverage": {
            "basis": "none",
            "checked": False,
            "ok": True,
            "expected": 0,
            "found": 0,
            "problems": [],
        },
        "lifecycle": None,
        "debug_retention": "on-error",
        "raw_retained": False,
        "counts": {
            "calls": 0,
            "generation_calls": 0,
            "attributed_calls": 0,
            "unattributed_calls": 0,
            "ambiguous_calls": 0,
            "exportable_calls": 0,
            "relations": 0,
            "participants": len(participants),
        },
        "files": {},
        **({"turns": [_turn(n, ids) for n, ids in enumerate(turns, 1)]} if turns else {}),
    }


def _turn(n: int, ids: list[str]) -> dict[str, Any]:
    return {
        "turn": n,
        "execution_status": "completed",
        "exit_code": 0,
        "started_at": None,
        "ended_at": None,
        "resumed_root": None,
        "call_ids": ids,
        "problem": None,
    }


def _validate(data: bytes, context: dict[str, Any] | None = None) -> Manifest:
    return Manifest.model_validate_json(data, context=context)


def _bytes(d: dict[str, Any]) -> bytes:
    return Manifest.model_validate(d).model_dump_json(by_alias=True).encode()


def test_long_lists_are_read_as_numbers_and_written_back_to_the_same_bytes() -> None:
    root = _calls(list(range(0, 10_000, 2)))  # more than a batch of json_items
    child = _calls([1, 3, 5, 100_001])
    data = _bytes(
        manifest_dict(
            [
                _participant("agent-1", root, _evidence(root, native=2)),
                _participant("agent-2", child, _evidence(child)),
                _participant("agent-3", ["x"], _evidence(["x"])),  # one item stays a list
            ],
            turns=[root[:5], child + root[5:]],
        )
    )
    read = manifest_json.load(data, _validate)
    assert read == _validate(data)
    first, second, third = read.participants
    assert isinstance(first.call_ids, NumberedIds)
    assert isinstance(first.evidence, NumberedEvidence)
    assert isinstance(second.call_ids, NumberedIds)
    assert isinstance(third.call_ids, list)
    assert read.turns is not None and isinstance(read.turns[1].call_ids, NumberedIds)
    assert list(first.evidence[:2]) == list(_validate(data).participants[0].evidence[:2])
    assert b"".join(manifest_json.chunks(read)) == data + b"\n"


ID = st.one_of(
    st.integers(min_value=0, max_value=10**7).map(lambda n: f"call-{SCOPE}-{n:05d}"),
    st.integers(min_value=0, max_value=10**7).map(lambda n: f"call-other-{n:05d}"),
    st.text(max_size=12),
    st.sampled_from(["call-x-0012", "call-x-012345", 'a"b', "a\\b", "é", "7", "x\n"]),
)


@settings(max_examples=200, deadline=None)
@given(
    lists=st.lists(st.lists(ID, max_size=12), min_size=1, max_size=4),
    native=st.integers(min_value=0, max_value=2),
)
def test_any_ids_read_and_write_as_pydantic_does(lists: list[list[str]], native: int) -> None:
    participants = [
        _participant(f"agent-{k}", ids, _evidence(ids, native)) for k, ids in enumerate(lists)
    ]
    data = _bytes(manifest_dict(participants, turns=lists))
    read = manifest_json.load(data, _validate)
    assert read == _validate(data)
    assert b"".join(manifest_json.chunks(read)) == data + b"\n"


def _error(read: Callable[[], Manifest]) -> str:
    with pytest.raises(ValidationError) as caught:
        read()
    return str(caught.value)


def _damaged() -> list[bytes]:
    ids = _calls(list(range(40)))
    good = _bytes(manifest_dict([_participant("agent-1", ids, _evidence(ids))], None))
    text = good.decode()
    return [
        text.replace('"call-0123456789ab-00007"', "7", 1).encode(),  # an id that is a number
        text.replace('"retained":true}', '"retained":1}', 1).encode(),
        text.replace('"sample_id":"s"', '"sample_id":5').encode(),  # after the lists
        text.replace('"state":"completed",', '"state":"completed",,').encode(),  # not JSON
        text[:-1].encode(),  # truncated
        text.replace('"call_ids":[', '"call_ids":[],"call_ids":[', 1).encode(),  # twice
    ]


@pytest.mark.parametrize("data", _damaged())
def test_a_damaged_manifest_gives_the_error_the_whole_text_gives(data: bytes) -> None:
    try:
        whole = _validate(data)
    except ValidationError:
        assert _error(lambda: manifest_json.load(data, _validate)) == _error(
            lambda: _validate(data)
        )
    else:  # a repeated key is valid JSON: the last one counts, as for pydantic
        assert manifest_json.load(data, _validate) == whole


def test_numbered_lists_made_by_finalize_serialize_as_lists() -> None:
    from roller.capture.models.numbered import call_evidence, call_ids_of, selected_ids

    ids = call_ids_of(f"call-{SCOPE}-", range(50))
    mine = selected_ids(ids, range(0, 50, 3))
    before = [{"source": "native:a", "ref": None, "retained": True}]
    d = manifest_dict([_participant("agent-1", list(mine), before + _evidence(list(mine)))], None)
    plain = Manifest.model_validate(d)
    evidence = call_evidence(ids, range(0, 50, 3), before=plain.participants[0].evidence[:1])
    numbered = plain.model_copy(
        update={
            "participants": [
                plain.participants[0].model_copy(update={"call_ids": mine, "evidence": evidence})
            ]
        }
    )
    assert numbered == plain
    assert numbered.model_dump_json() == plain.model_dump_json()
    assert json.loads(b"".join(manifest_json.chunks(numbered))) == json.loads(
        plain.model_dump_json(by_alias=True)
    )
    assert b"".join(manifest_json.chunks(numbered)) == b"".join(manifest_json.chunks(plain))

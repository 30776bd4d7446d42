"""`shell_json` is the shell record's serialization, built without the models: the same
bytes on every fixture call, and where orjson cannot write a value (the record path)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.finalize.test_decided import _parts
from tests.finalize.test_fixture_goldens import FIXTURES

from roller.capture.writer import serialize
from roller.finalize.decode import DecodedCall
from roller.finalize.shell import call_shell, shell_json


def _record_path(call: DecodedCall, call_id: str, tool_ids: tuple[str | None, ...]) -> bytes:
    return serialize(call_shell(call, call_id, tool_ids, with_context=False)).encode()


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_every_fixture_call_gives_the_records_bytes(
    harness: str, name: str, tmp_path: Path
) -> None:
    parts, calls = _parts(harness, name, tmp_path)
    for i, call in enumerate(calls):
        call_id, tool_ids = parts.ids.calls[i], parts.related.tool_ids[i]
        assert shell_json(call, call_id, tool_ids) == _record_path(call, call_id, tool_ids), i


@pytest.mark.parametrize(
    "output",
    [
        {"n": 2**64, "f": 1e300, "s": '\u2028\x7f\x00é😀"\\/'},  # past 64 bits: the record path
        {"f": [0.1, -0.0, 1e16, 5e-324, float("inf")], "t": (1, "a"), "k": {"": None}},
        {"s": "\ud800"},  # a lone surrogate (the record says what it says of it)
    ],
)
def test_values_orjson_writes_otherwise_take_the_record_path(
    output: dict[str, object], tmp_path: Path
) -> None:
    parts, calls = _parts(*FIXTURES[0], tmp_path)
    call = calls[0]
    assert call.reassembly is not None
    call = dataclasses.replace(call, reassembly=dataclasses.replace(call.reassembly, output=output))
    call_id, tool_ids = parts.ids.calls[0], parts.related.tool_ids[0]
    try:
        expected = _record_path(call, call_id, tool_ids)
    except ValueError as exc:  # what the record path raises, the fast path raises too
        with pytest.raises(type(exc)):
            shell_json(call, call_id, tool_ids)
    else:
        assert shell_json(call, call_id, tool_ids) == expected

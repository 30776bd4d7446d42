"""`decided_json` writes the stages' decisions into a shell's JSON: the record path's bytes.

Over every recorded fixture (each call, raw/ retained or not), and over outputs and
errors holding the very member names the splice looks for."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import fixture_dir, inputs_of, tape_of, unpacked_copy

from roller.capture.models import CaptureErrorRecord
from roller.capture.writer import serialize
from roller.finalize.assemble import CaptureParts, decide
from roller.finalize.decided import decided_json
from roller.finalize.decode import DecodedCall
from roller.finalize.pipeline import parts_in_memory
from roller.finalize.shell import UNDECIDED, call_shell
from roller.finalize.status import CallStatus
from roller.harnesses import adapter_for

ODD = ',"raw_path":null,"raw_sha256":"x","attribution":{"basis":"none"},"tool_refs":\u2028\\'


def _both(parts: CaptureParts, i: int, call: DecodedCall) -> tuple[bytes, bytes]:
    shell = call_shell(call, parts.ids.calls[i], parts.related.tool_ids[i], with_context=False)
    has_raw = shell.response.raw_sha256 is not None
    fast = decided_json(parts, i, serialize(shell).encode(), has_raw)
    return fast, serialize(decide(parts, i, shell)).encode()


def _parts(harness: str, name: str, tmp: Path) -> tuple[CaptureParts, list[DecodedCall]]:
    native_dir = unpacked_copy(fixture_dir(harness, name) / "native", tmp / "native")
    native = adapter_for(harness).read_native(native_dir)
    return parts_in_memory(inputs_of(harness, name), tape_of(harness, name, tmp), native)


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
@pytest.mark.parametrize("retained", [True, False])
def test_every_fixture_call_is_spliced_as_recorded(
    harness: str, name: str, retained: bool, tmp_path: Path
) -> None:
    parts, calls = _parts(harness, name, tmp_path)
    parts = dataclasses.replace(
        parts, verdict=dataclasses.replace(parts.verdict, retained=retained)
    )
    for i, call in enumerate(calls):
        fast, record = _both(parts, i, call)
        assert fast == record, (harness, name, i)


def test_member_names_inside_output_and_errors_are_left_alone(tmp_path: Path) -> None:
    harness, name = FIXTURES[0]
    parts, calls = _parts(harness, name, tmp_path)
    assert calls[0].reassembly is not None
    odd_output = {  # the members the splice looks for, as JSON writes them, in `output`
        "a": ODD,
        "participant_id": None,
        "raw_path": None,
        "raw_sha256": ODD,
        "attribution": json.loads(serialize(UNDECIDED)),
        "tool_refs": [ODD],
    }
    reassembly = dataclasses.replace(calls[0].reassembly, output=odd_output)
    call = dataclasses.replace(calls[0], reassembly=reassembly)
    status = parts.statuses[0]
    errors = [CaptureErrorRecord(code="x", message=ODD + '"}]}')]
    statuses = [CallStatus(status.capture, status.export, status.blocked, errors)]
    parts = dataclasses.replace(parts, statuses=statuses + list(parts.statuses[1:]))
    fast, record = _both(parts, 0, call)
    assert fast == record
    assert ODD.encode() not in record  # the odd text is there escaped, as JSON writes it

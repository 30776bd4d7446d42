"""`finalize_attempt` streams (one exchange at a time, bodies left on the tape) and still
writes exactly what the in-memory `build_capture` builds, over every recorded fixture.

tests/finalize/test_fixture_goldens.py pins `build_capture`'s bytes; this pins the
streaming shell to them: the same calls.jsonl and relations.jsonl bytes, the same
manifest once its `files` are filled in, the same raw response bodies. And a tape whose
conversations resend their transcripts, far longer than any fixture, gives the same
records both ways too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import fixture_dir, tape_of, unpacked_copy
from tests.support.tapes import conversations_tape, inputs

from roller.capture.files import jsonl_bytes
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs
from roller.capture.reader import read_json_model
from roller.capture.tape import read_tape
from roller.capture.writer import serialize
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.attempt import finalize_attempt
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for


def _attempt(harness: str, name: str, tmp: Path) -> AttemptPaths:
    paths = AttemptPaths(tmp / "attempt-0001")
    src = fixture_dir(harness, name)
    unpacked_copy(src / "tape", paths.tape)
    unpacked_copy(src / "native", paths.native)
    shutil.copyfile(src / "attempt.json", paths.attempt_inputs)
    return paths


def _same(paths: AttemptPaths, built: FinalizedCapture) -> None:
    assert paths.calls.read_bytes() == jsonl_bytes(serialize(c) for c in built.calls)
    assert paths.relations.read_bytes() == jsonl_bytes(serialize(r) for r in built.relations)
    on_disk = json.loads(paths.manifest.read_bytes())
    expected = json.loads(serialize(built.manifest))
    assert {k: v for k, v in on_disk.items() if k != "files"} == {
        k: v for k, v in expected.items() if k != "files"
    }
    for call_id, body in built.response_bodies.items():
        assert paths.response_body(call_id).read_bytes() == body


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_streaming_finalize_writes_what_build_capture_builds(
    harness: str, name: str, tmp_path: Path
) -> None:
    paths = _attempt(harness, name, tmp_path)
    inputs_ = read_json_model(paths.attempt_inputs, AttemptInputs)
    built = build_capture(
        inputs_,
        tape_of(harness, name, tmp_path / "copy"),
        adapter_for(harness).read_native(paths.native),
    )
    # raw/ may be cleaned by publication: compare before it is gone
    finalize_attempt(paths)
    _same(paths, built)


def test_long_conversations_stream_to_the_same_records(tmp_path: Path) -> None:
    """Sixty calls in three conversations, each request resending its whole history of
    tool calls and results: many derived relations, bodies kept (retention full)."""
    paths = AttemptPaths(tmp_path / "attempt-0001")
    paths.raw.mkdir(parents=True)
    paths.attempt_inputs.write_text(inputs("generic", "full").model_dump_json(by_alias=True))
    conversations_tape(paths.tape, 3, 20)
    built = build_capture(inputs("generic", "full"), read_tape(paths.tape), None)
    assert len(built.relations) == 3 * 19 * 20 // 2
    finalize_attempt(paths)
    _same(paths, built)

"""Retained raw/ stores each request body once: publication replaces the tape's body
frames by references into the capture, and re-finalizing from it is byte-identical.

Over real fixtures kept with `--capture-debug full` (tests/data/harnesses): after the
first finalize the tape's segments say version 2 and hold `bref` frames for every body
the capture gives back exactly (compact/v2: those that are the record's own JSON;
compact/v3: all), the tape shrinks by those bodies, every body read back through the
capture hashes to its call's `context_sha256`, and `roller finalize` again writes the
same bytes. Without the capture a reference is a tape problem, never a guess.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from roller.capture.body_refs import CaptureBodies, rewrite_tape
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.reader import iter_calls
from roller.capture.tape import RequestMeta, TapeWriter, read_tape
from roller.capture.tape.format import BodyRef
from roller.finalize.attempt import finalize_attempt
from tests.harnesses.fixture_capture import fixture_dir, unpacked_copy

RETAINED = [("claude-code", "parallel"), ("codex", "v1-nested"), ("opencode", "parallel")]


def _attempt(harness: str, name: str, dest: Path) -> AttemptPaths:
    paths = AttemptPaths(dest / "attempt-0001")
    src = fixture_dir(harness, name)
    unpacked_copy(src / "tape", paths.tape)
    unpacked_copy(src / "native", paths.native)
    inputs = json.loads((src / "attempt.json").read_text())
    inputs["debug_retention"] = "full"  # raw/ kept, whatever the run's own policy was
    paths.attempt_inputs.write_text(json.dumps(inputs))
    return paths


def _tape_bytes(paths: AttemptPaths) -> int:
    return sum(f.stat().st_size for f in paths.tape.iterdir())


def _published(paths: AttemptPaths) -> dict[str, bytes]:
    return {n: (paths.root / n).read_bytes() for n in ("calls.jsonl", "relations.jsonl")}


@pytest.mark.parametrize(("harness", "name"), RETAINED, ids=[f"{h}/{n}" for h, n in RETAINED])
@pytest.mark.parametrize("layout", ["compact/v2", "compact/v3"])
def test_bodies_are_stored_once_and_refinalizing_is_identical(
    harness: str, name: str, layout: str, tmp_path: Path
) -> None:
    paths = _attempt(harness, name, tmp_path)
    before = _tape_bytes(paths)
    original = read_tape(paths.tape)
    manifest = finalize_attempt(paths, layout)  # type: ignore[arg-type]
    assert manifest.raw_retained
    first, first_manifest = _published(paths), paths.manifest.read_bytes()
    segments = b"".join(f.read_bytes() for f in sorted(paths.tape.iterdir()))
    references = segments.count(b'"k":"bref"')
    calls = list(iter_calls(paths))
    bodies = sum(c.context_bytes for c in calls)
    if layout == "compact/v3":
        assert references == sum(1 for c in calls if c.context_bytes)
    assert references > 0 and b'"v":2' in segments
    assert _tape_bytes(paths) < before - bodies // 2 if layout == "compact/v3" else True
    # every body read back through the capture is the one recorded
    with CaptureBodies(paths) as resolve:
        tape = read_tape(paths.tape, resolve)
    assert not tape.problems
    assert [ex.request_body for ex in tape.exchanges] == [
        ex.request_body for ex in original.exchanges
    ]
    # without the capture, a reference is a problem and no body is made up
    bare = read_tape(paths.tape)
    assert len(bare.problems) == references
    # re-finalizing from the rewritten raw/ gives the same bytes
    finalize_attempt(paths)
    assert _published(paths) == first and paths.manifest.read_bytes() == first_manifest
    assert validate_attempt(paths).ok


def test_changing_layout_puts_back_what_the_new_capture_cannot_give(tmp_path: Path) -> None:
    """v3 references every body; re-published as v2, the bodies that are not the record's
    own JSON come back inline, and the result is what v2 gives from the original tape."""
    paths = _attempt("codex", "v1-nested", tmp_path / "a")
    finalize_attempt(paths, "compact/v3")
    finalize_attempt(paths, "compact/v2")
    direct = _attempt("codex", "v1-nested", tmp_path / "b")
    finalize_attempt(direct, "compact/v2")
    assert _published(paths) == _published(direct)
    assert not paths.contexts.exists() and validate_attempt(paths).ok
    with CaptureBodies(paths) as resolve:
        assert not read_tape(paths.tape, resolve).problems
    shutil.rmtree(tmp_path)


def test_a_body_that_spans_a_segment_rotation_becomes_one_reference(tmp_path: Path) -> None:
    """The proxy streams a big body to the tape in parts (tape version 3), so its body
    frames may lie in two segments: they become one `bref`, never one per segment."""
    parts = [b"a" * 400, b"b" * 400, b"c" * 400]
    body = b"".join(parts)
    tape = tmp_path / "tape"
    writer = TapeWriter(tape, segment_max_bytes=600, fsync_interval=None)
    x = writer.begin()
    writer.request(x, RequestMeta("POST", "/v1/messages"), body=parts[:1])
    writer.request_body(x, parts[1:2])
    writer.request_body(x, parts[2:])
    writer.close()
    assert len(list(tape.iterdir())) > 1  # the body frames span segments
    ref = BodyRef("call-1", 0, hashlib.sha256(body).hexdigest(), len(body))
    rewrite_tape(tape, {x: ref}, {})
    result = read_tape(tape, lambda r: body if r == ref else None)
    assert result.problems == ()
    (exchange,) = result.exchanges
    assert exchange.request_body == body


def test_a_body_the_damaged_capture_no_longer_holds_is_a_tape_problem_saying_why(
    tmp_path: Path,
) -> None:
    """The body of a call is stored once, in calls.jsonl: a calls.jsonl cut short loses
    it, and re-finalizing says so for each call whose body it cannot rebuild (its context
    null, the capture partial), never a traceback and never a made-up body."""
    paths = _attempt("claude-code", "parallel", tmp_path)
    finalize_attempt(paths)
    lines = paths.calls.read_bytes().splitlines(keepends=True)
    paths.calls.write_bytes(lines[0])  # only the first call's record survives
    referenced = read_tape(paths.tape).problems  # one per body reference on the tape

    manifest = finalize_attempt(paths)

    assert manifest.capture_status == "partial"
    lost = [e.message for e in manifest.capture_errors if e.code == "tape_problem"]
    assert 0 < len(lost) < len(referenced)  # the first call's body was still there
    assert all(
        "its request body was stored once, in the capture" in m
        and "no longer holds it as recorded" in m
        for m in lost
    )
    assert sum(c.context is None for c in iter_calls(paths)) == len(lost)
    assert validate_attempt(paths).ok  # what was published is consistent with itself

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

import json
import shutil
from pathlib import Path

import pytest

from roller.capture.body_refs import CaptureBodies
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.reader import iter_calls
from roller.capture.tape import read_tape
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

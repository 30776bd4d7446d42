"""The pipeline: every stage's capture errors reach the manifest in one fixed order.

Real runs perturbed so that each source of a capture error fires at once; the order of
the codes in the manifest is the one `pipeline._capture_errors` declares, and it never
depends on which stage found its problem first.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.harnesses.fixture_capture import inputs_of, native_copy, tape_of

from roller.capture.models import TurnInputs
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for
from roller.harnesses.base import AssignedToolId, NativeCapture, NativeProblem, NativeRelation

TORN = "tape-000001.rtape: torn frame at byte 7 (payload incomplete)"


def _native(harness: str, name: str, tmp_path: Path) -> NativeCapture:
    native = adapter_for(harness).read_native(native_copy(harness, name, tmp_path))
    assert native is not None and native.problems == ()
    return native


def test_every_error_source_in_the_declared_order(tmp_path: Path) -> None:
    native = _native("claude-code", "parallel", tmp_path)
    main, a, b = native.participants
    dropped = next(iter(native.identity.keys))
    perturbed = replace(
        native,
        problems=(NativeProblem("not_json", "not a JSON line (torn or corrupt)", "x.jsonl:2"),),
        # one call joins nothing: unattributed, and the native coverage no longer matches
        identity=replace(
            native.identity, keys={k: v for k, v in native.identity.keys.items() if k != dropped}
        ),
        # the native log says a is b's child; a's requests name the main thread
        participants=(main, replace(a, parent_key=b.key, depth=2), b),
        relations=(*native.relations, NativeRelation("spawn", "nobody", a.key, "toolu_x", ())),
    )
    turns = [
        TurnInputs(
            turn=1,
            resumed_root=None,
            started_ns=0,
            ended_ns=1,
            exit_code=0,
            timed_out=False,
            launch_error=None,
            not_run=None,
        ),
        TurnInputs(
            turn=2,
            resumed_root=None,
            started_ns=None,
            ended_ns=None,
            exit_code=None,
            timed_out=False,
            launch_error=None,
            not_run="no root confirmed",
        ),
    ]
    inputs = inputs_of("claude-code", "parallel").model_copy(
        update={"launch_error": "boom", "turns": turns}
    )
    tape = replace(tape_of("claude-code", "parallel", tmp_path), problems=(TORN,))
    manifest = build_capture(inputs, tape, perturbed).manifest
    assert [e.code for e in manifest.capture_errors] == [
        "tape_problem",
        "native_log_problem",
        "unattributed_calls",
        "parent_disagreement",
        "coverage_mismatch",
        "launch_error",
        "turn_not_run",
        "relations_unknown",
    ]
    messages = [e.message for e in manifest.capture_errors]
    assert messages[:3] == [
        TORN,
        "x.jsonl:2: not a JSON line (torn or corrupt)",  # where, then what
        "1 generation call(s) could not be attributed by evidence",
    ]
    assert messages[5:] == [
        "boom",
        "turn 2 did not run: no root confirmed",
        "1 native relation(s) could not be bound to calls uniquely",
    ]
    assert manifest.capture_status == "partial"


def test_a_tool_id_list_that_does_not_fit_comes_after_the_readers_problems(tmp_path: Path) -> None:
    native = _native("gemini-cli", "parallel", tmp_path)
    rid, listed = next(iter(native.assigned_tool_ids.items()))
    perturbed = replace(
        native,
        problems=(NativeProblem("missing_file", "no chat file", "subagent x"),),
        assigned_tool_ids={rid: tuple(AssignedToolId("other", a.id) for a in listed)},
    )
    tape = tape_of("gemini-cli", "parallel", tmp_path)
    manifest = build_capture(inputs_of("gemini-cli", "parallel"), tape, perturbed).manifest
    first, second = manifest.capture_errors[:2]
    assert (first.code, first.message) == ("native_log_problem", "subagent x: no chat file")
    assert second.code == "native_log_problem"
    assert second.message.startswith(f"response {rid}: the native log assigns tool-call ids to ")

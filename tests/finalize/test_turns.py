"""Finalizing a multi-turn attempt: each turn's calls, statuses, and what validate checks.

Real tapes (TapeWriter, frame times set by hand), real finalize and publish, real
`validate_attempt`; the generic harness's wire identity (`x-roller-session-id`)
attributes the calls, so nothing but the turns differs from a single-prompt capture.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.tapes import anthropic_reply, inputs, new_tape, write_exchange

from roller.capture.files import atomic_write
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, TurnInputs
from roller.capture.reader import dump_json, read_attempt
from roller.finalize.attempt import finalize_attempt

BODY = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}
SECOND = 1_800_000_000_000_000_000  # a wall-clock ns value; the turns are seconds apart


def _turn(n: int, start: int | None, exit_code: int | None = 0, **kw: object) -> TurnInputs:
    return TurnInputs(
        turn=n,
        resumed_root=None if n == 1 or start is None else "root-session",
        started_ns=start,
        ended_ns=None if start is None else start + SECOND // 2,
        exit_code=exit_code,
        timed_out=bool(kw.get("timed_out", False)),
        launch_error=None,
        not_run=kw.get("not_run"),  # type: ignore[arg-type]
    )


def _attempt(tmp_path: Path, arrivals: list[int], turns: list[TurnInputs] | None) -> AttemptPaths:
    paths = AttemptPaths(tmp_path / "attempt-0001")
    with new_tape(paths.tape) as tape:
        for n, t in enumerate(arrivals):
            write_exchange(
                tape,
                [("content-type", "application/json")],
                BODY,
                anthropic_reply(f"msg_{n}"),
                roller={"x-roller-session-id": "conv"},
                t=t,
            )
    ran = [t for t in turns or [] if t.not_run is None]
    last = ran[-1] if ran else None
    base: AttemptInputs = inputs("generic")
    atomic_write(
        paths.attempt_inputs,
        dump_json(
            base.model_copy(
                update={
                    "exit_code": last.exit_code if last else 0,
                    "timed_out": last.timed_out if last else False,
                    "turns": turns,
                }
            )
        ),
    )
    return paths


def test_each_call_belongs_to_the_turn_running_when_it_arrived(tmp_path: Path) -> None:
    t1, t2 = SECOND, 3 * SECOND
    paths = _attempt(tmp_path, [t1 + 10, t1 + 20, t2 + 10, t2 + 30], [_turn(1, t1), _turn(2, t2)])
    manifest = finalize_attempt(paths)
    assert manifest.turns is not None
    one, two = manifest.turns
    call_ids = [c.call_id for c in read_attempt(paths).calls]
    assert (one.call_ids, two.call_ids) == (call_ids[:2], call_ids[2:])
    assert (one.resumed_root, two.resumed_root) == (None, "root-session")
    assert [t.execution_status for t in manifest.turns] == ["completed", "completed"]
    assert (manifest.execution_status, manifest.capture_status) == ("completed", "complete")
    assert validate_attempt(paths).ok


def test_a_turn_that_never_ran_fails_the_attempt_and_makes_it_partial(tmp_path: Path) -> None:
    t1 = SECOND
    why = "cannot resume: claude-code: 2 root conversations in the native logs"
    paths = _attempt(tmp_path, [t1 + 10], [_turn(1, t1), _turn(2, None, None, not_run=why)])
    manifest = finalize_attempt(paths)
    assert manifest.turns is not None
    assert [(t.execution_status, t.problem) for t in manifest.turns] == [
        ("completed", None),
        ("not_run", why),
    ]
    assert (manifest.execution_status, manifest.capture_status) == ("failed", "partial")
    assert [e.code for e in manifest.capture_errors] == ["turn_not_run"]
    assert validate_attempt(paths).ok
    assert manifest.raw_retained  # on-error retention keeps raw/ of a failed attempt


def test_a_timed_out_turn_is_interrupted_and_says_so(tmp_path: Path) -> None:
    t1 = SECOND
    turns = [_turn(1, t1, None, timed_out=True), _turn(2, None, None, not_run="turn 1 timed out")]
    manifest = finalize_attempt(_attempt(tmp_path, [t1 + 10], turns))
    assert manifest.turns is not None
    assert [(t.execution_status, t.problem) for t in manifest.turns] == [
        ("interrupted", "timed out and stopped"),
        ("not_run", "turn 1 timed out"),
    ]
    assert manifest.execution_status == "interrupted"


def test_a_single_prompt_manifest_has_no_turns_field(tmp_path: Path) -> None:
    paths = _attempt(tmp_path, [SECOND], None)
    manifest = finalize_attempt(paths)
    assert manifest.turns is None
    assert "turns" not in json.loads(paths.manifest.read_text())
    assert "turns" not in json.loads(paths.attempt_inputs.read_text())


def test_validate_rejects_turns_that_disagree_with_the_calls(tmp_path: Path) -> None:
    t1, t2 = SECOND, 3 * SECOND
    paths = _attempt(tmp_path, [t1 + 10, t2 + 10], [_turn(1, t1), _turn(2, t2)])
    finalize_attempt(paths)
    manifest = json.loads(paths.manifest.read_text())
    first = manifest["turns"][0]["call_ids"][0]
    manifest["turns"][1]["call_ids"].append(first)  # one call in two turns
    manifest["turns"][0]["call_ids"].append("call-nope")  # a call that does not exist
    manifest["turns"][1]["execution_status"] = "failed"  # yet the attempt says completed
    paths.manifest.write_text(json.dumps(manifest))
    report = validate_attempt(paths)
    assert sorted(p.code for p in report.problems) == [
        "dangling_call",
        "duplicate_id",
        "status_inconsistent",
    ]

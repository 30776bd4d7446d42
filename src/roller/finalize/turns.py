"""The turns of a multi-turn attempt: each harness run's status and the calls it made.

`roller collect --prompt A --prompt B` runs one harness process per turn, one at a time,
through one proxy: turn n+1 is launched only after turn n's process group has ended and
the proxy has drained. So a call belongs to turn n when its request reached the proxy
after turn n was launched and before turn n+1 was: no process of turn n+1 existed before
its launch, and none of turn n survived it. That is causality between two timestamps of
one clock (the tape's frame times and the launch times are both `time.time_ns()` of the
collecting process), not a guess about a call's owner: which participant made a call is
still decided by evidence alone (`roller.finalize.attribute`).

Rules kept:
- a turn's status follows the same rule as a single run's (`run_status`);
- a turn that did not run (an earlier one did not complete, or the root conversation it
  should resume was not confirmed) is `not_run` and a capture error (`turn_not_run`):
  the conversation asked for was not collected, so the capture is partial, and the
  attempt's execution is not `completed` even when every turn that ran completed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roller.capture.models import AttemptInputs, ExecutionStatus, TurnInputs, TurnRecord
from roller.capture.models.numbered import selected_ids

Clock = Callable[[int | None], str | None]  # ns -> RFC 3339, finalize's one rendering


def run_status(exit_code: int | None, timed_out: bool, launch_error: str | None) -> ExecutionStatus:
    """How one harness run ended: killed (timeout, Ctrl-C, a signal) is `interrupted`;
    a launch error or a non-zero exit is `failed`."""
    if timed_out or (exit_code is None and launch_error is None):
        return "interrupted"
    if launch_error is not None or exit_code != 0:
        return "failed"
    return "completed"


def attempt_execution(inputs: AttemptInputs) -> ExecutionStatus:
    """The attempt's execution: its last run's, and `failed` when a turn never ran after
    runs that all completed (the conversation asked for did not finish)."""
    status = run_status(inputs.exit_code, inputs.timed_out, inputs.launch_error)
    if status == "completed" and any(t.not_run is not None for t in inputs.turns or ()):
        return "failed"
    return status


def _record(turn: TurnInputs, call_ids: Sequence[str], rfc3339: Clock) -> TurnRecord:
    if turn.not_run is not None or turn.started_ns is None:
        return TurnRecord(
            turn=turn.turn,
            execution_status="not_run",
            exit_code=None,
            started_at=None,
            ended_at=None,
            resumed_root=None,
            call_ids=[],
            problem=turn.not_run or "the turn has no launch time",
        )
    status = run_status(turn.exit_code, turn.timed_out, turn.launch_error)
    problem = None
    if turn.launch_error is not None:
        problem = turn.launch_error
    elif turn.timed_out:
        problem = "timed out and stopped"
    elif status == "interrupted":
        problem = "stopped before it exited"
    elif status == "failed":
        problem = f"exited with status {turn.exit_code}"
    return TurnRecord(
        turn=turn.turn,
        execution_status=status,
        exit_code=turn.exit_code,
        started_at=rfc3339(turn.started_ns),
        ended_at=rfc3339(turn.ended_ns),
        resumed_root=turn.resumed_root,
        call_ids=call_ids,
        problem=problem,
    )


def turn_records(
    inputs: AttemptInputs, arrivals: Sequence[int], call_ids: Sequence[str], rfc3339: Clock
) -> list[TurnRecord] | None:
    """Per-turn records (None for a single-prompt attempt).

    `arrivals[i]` is when call `call_ids[i]`'s request reached the proxy (ns).
    """
    if inputs.turns is None:
        return None
    starts = sorted(
        (t.started_ns, t.turn)
        for t in inputs.turns
        if t.not_run is None and t.started_ns is not None
    )
    owned: dict[int, list[int]] = {}
    for i, (arrival, _) in enumerate(zip(arrivals, call_ids, strict=True)):
        # The last turn launched at or before the request arrived; none before turn 1.
        turn = next((n for start, n in reversed(starts) if start <= arrival), None)
        if turn is not None:
            owned.setdefault(turn, []).append(i)
    return [
        _record(t, selected_ids(call_ids, owned.get(t.turn, [])), rfc3339) for t in inputs.turns
    ]


def turns_not_run(records: Sequence[TurnRecord] | None) -> list[str]:
    """The `turn_not_run` capture errors' messages, one per turn that did not run."""
    return [
        f"turn {r.turn} did not run: {r.problem}"
        for r in records or ()
        if r.execution_status == "not_run"
    ]

"""When an OpenClaw run is over: its children finished and their notifications drained.

`openclaw agent` returns when the parent's turn ends; each child then runs on the
Gateway and its result comes back as a later announce turn of its requester (and, for
several children or a nested requester, a settle turn). The one rule, used both by the
launcher's wait (`roller.harnesses.openclaw.gateway`, over the live stores) and by the
reader (`native`, over the copies), holds when ALL of these do (2026.9.6, measured):
- every `subagent_runs` row: `execution.status` is `terminal`, its `delivery.status` is
  not one still in flight (`pending`, `in_progress`, `suspended`), its cleanup completed
  and no `requesterSettleWake` is left on it (the settle turn has not run while it is);
- every `task_runs` row: a terminal `status`, and a `delivery_status` that is not still
  owed (`pending`, `session_queued`);
- no session window is `running` and no session input is pending.
A child is *pending* when its own row fails the first rule. A delivery that ended badly
(`failed`, `parent_missing`, a `lost` or `timed_out` task) is over, but is a drain
failure: the notification will never arrive. A spawned child that no registry row names
(neither `subagent_runs` nor a `subagent` `task_runs` row), or whose rows name another run
than its acceptance did (`runId`; a `subagent_runs` row may hold a later `…:wake` run with
the accepted one as its `taskRunId`), has a lifecycle nobody recorded: `unknown`, never
`complete`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roller.harnesses.base import NativeProblemCode
from roller.harnesses.openclaw.store import SubagentRun, TaskRun

TERMINAL_TASK = frozenset({"succeeded", "failed", "timed_out", "cancelled", "lost"})
IN_FLIGHT_DELIVERY = frozenset({"pending", "in_progress", "suspended"})
OWED_TASK_DELIVERY = frozenset({"pending", "session_queued"})
FAILED_DELIVERY = frozenset({"failed", "parent_missing"})
FAILED_TASK = frozenset({"lost", "timed_out"})


def run_pending(run: SubagentRun) -> bool:
    """Whether a child's run, or the delivery of its result, is not over yet."""
    return (
        run.execution != "terminal"
        or run.delivery in IN_FLIGHT_DELIVERY
        or not run.cleaned_up
        or run.settle_pending
    )


def task_pending(task: TaskRun) -> bool:
    return task.status not in TERMINAL_TASK or task.delivery in OWED_TASK_DELIVERY


@dataclass(frozen=True)
class Drain:
    """The lifecycle read from the stores: `pending` child keys (and whether anything
    else is still in flight), and the failures that mean a notification never comes."""

    pending_children: tuple[str, ...]
    busy: bool
    failures: tuple[str, ...]

    @property
    def drained(self) -> bool:
        return not self.pending_children and not self.busy


def drain_state(
    runs: Sequence[SubagentRun],
    tasks: Sequence[TaskRun],
    window_status: Iterable[str | None],
    pending_inputs: int,
) -> Drain:
    pending = tuple(dict.fromkeys(r.child_key for r in runs if run_pending(r)))
    busy = (
        any(task_pending(t) for t in tasks)
        or any(status == "running" for status in window_status)
        or pending_inputs > 0
    )
    failures = [
        f"the delivery of child {r.child_key}'s result ended {r.delivery}"
        for r in runs
        if r.delivery in FAILED_DELIVERY
    ]
    failures += [
        f"task {t.run_id} ({t.runtime}) ended {t.status}" for t in tasks if t.status in FAILED_TASK
    ]
    failures += [
        f"the notification of task {t.run_id} ended {t.delivery}"
        for t in tasks
        if t.delivery in FAILED_DELIVERY
    ]
    return Drain(pending, busy, tuple(failures))


def registry_gaps(
    spawned: Iterable[tuple[str, str | None]],
    runs: Sequence[SubagentRun],
    tasks: Sequence[TaskRun],
) -> list[tuple[NativeProblemCode, str]]:
    """Why the lifecycle of a spawned child (child key, accepted run id) is unknown."""
    gaps: list[tuple[NativeProblemCode, str]] = []
    for child, accepted in dict.fromkeys(spawned):
        named = {r.run_id for r in runs if r.child_key == child}
        named |= {r.task_run_id for r in runs if r.child_key == child and r.task_run_id}
        named |= {
            t.run_id for t in tasks if t.runtime == "subagent" and t.child_key == child and t.run_id
        }
        if not named:
            gaps.append(
                ("missing_record", f"no subagent_runs or task_runs row names child {child}")
            )
        elif accepted is not None and accepted not in named:
            gaps.append(
                (
                    "disagreement",
                    f"child {child} was accepted as run {accepted}, but its registry rows "
                    f"name {sorted(named)}",
                )
            )
    return gaps

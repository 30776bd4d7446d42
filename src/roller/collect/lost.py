"""Lost attempts: an attempt whose runner died somewhere the driver cannot reach into (a
Ray worker process, or the node it ran on), recorded on the driver as `interrupted`
with the reason.

An executor that loses a runner returns `AttemptLost` instead of a finished attempt; the
run driver (`roller.collect.collection`), not the executor, records it here and then
judges it like any other attempt (`roller.collect.verdicts`), so a lost attempt is kept,
never reused, and its sample gets a new attempt.

Facts relied on:
- an attempt whose `raw/attempt.json` has no exit code and no launch error finalizes as
  execution `interrupted` (`roller.finalize.turns.run_status`): the same record a runner
  killed in the middle of its harness leaves. When the attempt directory already holds
  what the runner wrote (the run directory is shared with the worker), that is finalized
  as it is, tape and all; otherwise the driver writes the runner's opening record itself
  (a fresh capture scope, no calls: they were on the lost node);
- the reason lives beside the capture, in `samples/<id>/lost/attempt-NNNN.json`
  (`SamplePaths.lost_file`), not in raw/, so retention never removes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths, SamplePaths
from roller.capture.reader import dump_json
from roller.collect.runs import now_rfc3339
from roller.collect.session import AttemptJob, attempt_inputs
from roller.export.trajectory_file import write_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.harnesses import adapter_for


@dataclass(frozen=True)
class AttemptLost:
    """What an executor returns when the attempt's runner died: why, and where."""

    reason: str  # e.g. "WorkerCrashedError: the worker died unexpectedly …"
    where: str | None = None  # the node it ran on, when known
    started_at: str | None = None  # when the executor handed it to the runner


def _sample(attempt: AttemptPaths) -> SamplePaths:
    return SamplePaths(attempt.root.parent.parent)  # samples/<id>/capture/attempt-NNNN


def record_lost(job: AttemptJob, lost: AttemptLost) -> AttemptPaths:
    """Publish the lost attempt as interrupted (finalized here, from what there is) and
    write why it was lost."""
    attempt = job.attempt
    record = {"reason": lost.reason, "where": lost.where, "recorded_at": now_rfc3339()}
    atomic_write(
        _sample(attempt).lost_file(attempt.attempt_number),
        (json.dumps(record) + "\n").encode(),
    )
    if not attempt.manifest.exists():
        if not attempt.attempt_inputs.exists():
            inputs = attempt_inputs(job, adapter_for(job.spec.harness).profile)
            started = lost.started_at or inputs.started_at
            inputs = inputs.model_copy(update={"started_at": started, "ended_at": now_rfc3339()})
            atomic_write(attempt.attempt_inputs, dump_json(inputs))
        attempt.tape.mkdir(parents=True, exist_ok=True)  # its calls were on the lost node
        finalize_attempt(attempt)
        write_trajectory(attempt)
    return attempt


def lost_reason(attempt: AttemptPaths) -> str | None:
    """Why the attempt was lost, when it was (read back on every judgement)."""
    try:
        record = json.loads(_sample(attempt).lost_file(attempt.attempt_number).read_text())
        return str(record["reason"]) + (f" (on {record['where']})" if record.get("where") else "")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return "lost (its record cannot be read)"

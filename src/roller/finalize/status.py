"""The status stage: each call's capture and export status, and the capture's verdict.

Per call (`call_statuses`): the rules of `roller.capture.statuses` (which `roller
validate` re-checks) over what decode and attribute found; a call's own errors (a
request body that is not JSON, a response that cannot be decoded) count there.

The capture (`verdict`):
- `complete` only when every call's capture is complete, there is no capture error
  (a relation not bound uniquely is one), the native lifecycle is not open (`pending`,
  `unknown`) and a checked native coverage matched; else `partial`;
- retention (`--capture-debug`): `full` always keeps raw/, `off` never does; `on-error`
  keeps it when the harness did not complete, a call's capture is partial, there is a
  capture error, the lifecycle is open, a model call failed or was interrupted, or a
  subtask failed. It is decided before any record is built, so a cleaned capture's
  records already say `raw_path: null` and evidence `retained: false`, and no status
  depends on whether raw/ survived.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roller.capture.models import (
    CaptureErrorRecord,
    CaptureStatus,
    Coverage,
    ExecutionStatus,
    ExportBlock,
    ExportStatus,
    LifecycleStatus,
    Retention,
)
from roller.capture.statuses import capture_status, export_status
from roller.finalize.attribute import CallAttribution
from roller.finalize.call_facts import CallFacts, SharedFacts
from roller.finalize.kept_facts import shared_of
from roller.harnesses.base import ParticipantState


@dataclass(frozen=True)
class CallStatus:
    capture: CaptureStatus
    export: ExportStatus
    blocked: list[ExportBlock]
    errors: list[CaptureErrorRecord]  # the call's own


def call_statuses(
    calls: Sequence[CallFacts], attributions: Sequence[CallAttribution]
) -> list[CallStatus]:
    """Each call's status. A call's status is a function of its `SharedFacts` and its
    identity status alone, so calls without errors of their own share one frozen value
    per outcome (every call's status is held until assembly, and most are alike), and
    it is decided once per shared facts object (kept here, so its id is not reused)."""
    out = []
    by_outcome: dict[tuple[str, str, tuple[str, ...]], CallStatus] = {}
    decided: dict[tuple[int, str], tuple[SharedFacts, CallStatus]] = {}
    for facts, attr in zip(shared_of(calls), attributions, strict=True):
        known = decided.get((id(facts), attr.status))
        if known is not None:
            out.append(known[1])
            continue
        errors = [CaptureErrorRecord(code=c, message=m) for c, m in facts.errors]
        s = facts.status_inputs(attr.status, len(errors))
        export, blocked = export_status(s)
        status = CallStatus(capture_status(s), export, blocked, errors)
        if not errors:
            status = by_outcome.setdefault((status.capture, export, tuple(blocked)), status)
            decided[id(facts), attr.status] = (facts, status)
        out.append(status)
    return out


@dataclass(frozen=True)
class Verdict:
    complete: bool  # the manifest's capture_status
    retained: bool  # raw/ is kept


def verdict(
    *,
    retention: Retention,
    execution: ExecutionStatus,
    call_captures: Sequence[CaptureStatus],
    call_executions: Sequence[ExecutionStatus],
    participant_states: Sequence[ParticipantState],
    lifecycle: LifecycleStatus,
    coverage: Coverage,
    errors: bool,
) -> Verdict:
    """Whether the capture is complete, and whether raw/ is kept (module docstring).

    `execution` is the attempt's; `call_*` are per call, `participant_states` per
    participant; `errors` says whether there is any capture error."""
    partial = (
        any(c != "complete" for c in call_captures) or errors or lifecycle in ("pending", "unknown")
    )
    if retention == "full":
        retained = True
    elif retention == "off":
        retained = False
    else:
        call_failed = any(e != "completed" for e in call_executions)
        child_failed = any(state == "failed" for state in participant_states)
        retained = execution != "completed" or partial or call_failed or child_failed
    complete = not partial and (coverage.ok or not coverage.checked)
    return Verdict(complete=complete, retained=retained)

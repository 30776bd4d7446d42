"""Finalize as a pipeline: decode → attribute → relate → status → assemble.

`build_capture(inputs, tape, native) -> FinalizedCapture` runs the stages in that order,
each a module of its own that reads only what the stages before it made:
- decode (`decode`): each tape exchange -> a `DecodedCall` (wire facts, call statuses);
- attribute (`attribute`): calls + native facts -> each call's participant, the
  participants; `ids` then numbers calls and participants;
- relate (`relate`): native relations bound to calls, context relations derived;
- status (`status`, with the checks `coverage` and `turns`): per-call capture/export
  statuses, then the capture's verdict (complete or partial, raw/ retained or not)
  from every capture error, collected here in one fixed order (`_capture_errors`);
- assemble (`assemble`): the records and the manifest.
Pure and deterministic: the same tape, native capture and attempt inputs always give
the same records, byte for byte (ids come from the capture scope and arrival order,
never from a clock or a random source).

The stages between decode and assemble read only each call's `CallFacts`, so
`capture_parts` takes those: `build_capture` (everything in memory, for tests and small
tapes) and `roller.finalize.attempt` (one exchange at a time, bodies left on the tape)
run the same stages over the same facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from roller.capture.models import AttemptInputs, Coverage, TurnRecord
from roller.capture.tape import TapeReadResult
from roller.finalize.assemble import CaptureParts, FinalizedCapture, assemble
from roller.finalize.attribute import (
    AttributionResult,
    attribute,
    parent_disagreements,
    unattributed_calls,
)
from roller.finalize.call_facts import SharedFacts
from roller.finalize.capture_errors import CaptureErrors
from roller.finalize.coverage import check_coverage, coverage_mismatch, lifecycle
from roller.finalize.decode import NOT_UNICODE, DecodedCall, decode_exchange
from roller.finalize.ids import CaptureIds, capture_ids
from roller.finalize.inherited import Requests, inherited_record
from roller.finalize.kept_facts import KeptFacts
from roller.finalize.relate import Related, relate
from roller.finalize.shell import rfc3339
from roller.finalize.status import call_statuses, verdict
from roller.finalize.turns import attempt_execution, turn_records, turns_not_run
from roller.harnesses.base import NativeCapture
from roller.harnesses.native_capture import held_native


def build_capture(
    inputs: AttemptInputs, tape: TapeReadResult, native: NativeCapture | None
) -> FinalizedCapture:
    return assemble(*parts_in_memory(inputs, tape, native))


def parts_in_memory(
    inputs: AttemptInputs, tape: TapeReadResult, native: NativeCapture | None
) -> tuple[CaptureParts, list[DecodedCall]]:
    """Every stage but assemble over a tape read into memory, and the decoded calls."""
    native = held_native(native)  # as finalize_attempt holds it (a record needs Unicode)
    # decode
    decoded = [decode_exchange(n, ex, inputs.harness.name) for n, ex in enumerate(tape.exchanges)]
    facts = KeptFacts()
    for c in decoded:
        facts.add(c)
    return capture_parts(
        inputs, facts, tape.problems, native, lambda i: decoded[i].request
    ), decoded


def capture_parts(
    inputs: AttemptInputs,
    calls: KeptFacts,
    tape_problems: Sequence[str],
    native: NativeCapture | None,
    requests: Requests,
) -> CaptureParts:
    """Every stage after decode but the last: what `assemble` builds the records from.
    `requests(i)` gives call i's request again when a stage asks for it (relate for a
    delivered notification's text, the check of a forked child's copied prefix)."""
    # attribute, then number calls and participants
    attributed = attribute(calls, native, single_agent=bool(inputs.declared_single_agent))
    ids = capture_ids(inputs.capture_scope, calls, attributed.participants)
    # relate
    related = relate(calls, attributed.owners, ids, native, lambda i: requests(i).texts)
    # status: per call, the checks against native facts and turns, the capture errors
    # in their fixed order, then the verdict (complete? raw/ retained?)
    statuses = call_statuses(calls, attributed.calls)
    coverage = check_coverage(calls, attributed.owners, native)
    cycle = lifecycle(native, ids.participants)
    arrivals = [c.request_time_ns for c in calls] if inputs.turns is not None else []
    turns = turn_records(inputs, arrivals, ids.calls, rfc3339)
    execution = attempt_execution(inputs)
    errors = _capture_errors(
        inputs, tape_problems, native, calls, attributed, ids, related, coverage, turns
    )
    judged = verdict(
        retention=inputs.debug_retention,
        execution=execution,
        call_captures=[s.capture for s in statuses],
        call_executions=[s.execution_status for s in calls.shared()],
        participant_states=[d.state for d in attributed.participants],
        lifecycle=cycle.status,
        coverage=coverage,
        errors=bool(errors),
    )
    inherited = {
        d.key: inherited_record(
            d.inherited,
            d.key,
            calls,
            attributed.owners,
            requests,
            ids.participants,
            judged.retained,
        )
        for d in attributed.participants
    }
    return CaptureParts(
        inputs=inputs,
        native=native,
        calls=calls,
        attributed=attributed,
        ids=ids,
        related=related,
        statuses=statuses,
        verdict=judged,
        coverage=coverage,
        lifecycle=cycle,
        execution=execution,
        turns=turns,
        errors=errors.records(),
        inherited=inherited,
    )


def _capture_errors(
    inputs: AttemptInputs,
    tape_problems: Sequence[str],
    native: NativeCapture | None,
    calls: KeptFacts,
    attributed: AttributionResult,
    ids: CaptureIds,
    related: Related,
    coverage: Coverage,
    turns: Sequence[TurnRecord] | None,
) -> CaptureErrors:
    """Every capture error, in the order manifests have always listed them."""
    errors = CaptureErrors()
    errors.extend("tape_problem", tape_problems)
    native_problems = native.problems if native is not None else ()
    for problem in native_problems:
        if problem.code != "text_not_unicode":
            errors.add("native_log_problem", problem.message, problem.where)
    errors.extend("native_log_problem", related.tool_id_problems)
    errors.extend("unattributed_calls", unattributed_calls(calls, attributed))
    errors.extend(
        "parent_disagreement", parent_disagreements(attributed, ids.calls, ids.participants)
    )
    errors.extend("coverage_mismatch", coverage_mismatch(coverage))
    errors.extend("launch_error", [inputs.launch_error] if inputs.launch_error else [])
    errors.extend("turn_not_run", turns_not_run(turns))
    errors.extend("relations_unknown", related.unknown_messages())
    # a record shows such text with U+FFFD: the capture is not the exact one, so raw/
    # (the tape, with the exact bytes) is kept
    errors.extend("text_not_unicode", _not_unicode(calls.shared()))
    for problem in native_problems:
        if problem.code == "text_not_unicode":  # `held_native`: raw/native/ has the bytes
            errors.add("text_not_unicode", problem.message, problem.where)
    return errors


def _not_unicode(calls: Iterable[SharedFacts]) -> list[str]:
    held = sum(any(code == "text_not_unicode" for code, _ in c.errors) for c in calls)
    if not held:
        return []
    return [f"{held} call(s) carry text that is not Unicode: {NOT_UNICODE}"]

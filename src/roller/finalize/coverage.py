"""The native output coverage check and the lifecycle, as pure functions.

Coverage asks: does every output the native logs record have a captured call, and does
every attributed call correspond to a native output? Per-id bases compare response ids
per participant; count bases compare the number of completed generation calls per
participant with the native count (weaker: a count can match by accident, which is why
`capabilities.native_output_coverage` names the basis). A count basis may also list
the ids its native records carry (Codex `token_usage_record.response_id`); each must
then be among the participant's captured calls, and so must each native tool-call id it
lists (`NativeCoverage.tool_call_ids`, Hermes and DeepSeek Harness: the native outputs'
tool calls, which a count alone would not tell apart). A checked coverage that does not
match is a `coverage_mismatch` capture error (`coverage_mismatch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from roller.capture.models import Coverage, Lifecycle
from roller.finalize.call_facts import CallFacts
from roller.finalize.kept_facts import outputs_of, response_ids_of, shared_of
from roller.harnesses.base import NativeCapture

_PER_ID = frozenset({"per_message_id", "per_response_id"})


def check_coverage(
    calls: Sequence[CallFacts],
    owners: Sequence[str | None],
    native: NativeCapture | None,
) -> Coverage:
    if native is None or native.coverage.basis == "none":
        return Coverage(basis="none", checked=False, ok=True, expected=0, found=0, problems=[])
    cov = native.coverage
    problems: list[str] = []
    expected = found = 0
    if cov.basis in _PER_ID:
        captured: dict[str, set[str]] = {}
        for response_id, owner in zip(response_ids_of(calls), owners, strict=True):
            if owner is not None and response_id is not None:
                captured.setdefault(owner, set()).add(response_id)
        for key in sorted(cov.ids):
            ids = cov.ids[key]
            got = captured.get(key, set())
            expected += len(ids)
            found += len(ids & got)
            for missing in sorted(ids - got):
                problems.append(f"{key}: native output {missing} has no captured call")
            for extra in sorted(got - ids):
                problems.append(f"{key}: captured call {extra} is not in the native log")
    else:
        counted: dict[str, int] = {}
        for facts, owner in zip(shared_of(calls), owners, strict=True):
            if (
                owner is not None
                and facts.kind == "generation"
                and facts.execution_status == "completed"
            ):
                counted[owner] = counted.get(owner, 0) + 1
        for key in sorted(set(cov.counts) | set(counted)):
            want = cov.counts.get(key, 0)
            have = counted.get(key, 0)
            expected += want
            found += min(want, have)
            if want != have:
                problems.append(
                    f"{key}: native log records {want} outputs, {have} completed calls captured"
                )
        problems += _id_problems(calls, owners, cov.ids)
        problems += _tool_call_problems(calls, owners, cov.tool_call_ids)
    return Coverage(
        basis=cov.basis,
        checked=True,
        ok=not problems,
        expected=expected,
        found=found,
        problems=problems,
    )


def _id_problems(
    calls: Sequence[CallFacts], owners: Sequence[str | None], ids: Mapping[str, frozenset[str]]
) -> list[str]:
    """A count basis whose native records also name response ids (Codex
    `token_usage_record.response_id`) is cross-checked per id as well: a count can match
    by accident, an id cannot."""
    captured: dict[str, set[str]] = {}
    rows = zip(shared_of(calls), response_ids_of(calls), owners, strict=True)
    for facts, response_id, owner in rows:
        if owner is not None and facts.kind == "generation" and response_id:
            captured.setdefault(owner, set()).add(response_id)
    return [
        f"{key}: native output {missing} has no captured call"
        for key in sorted(ids)
        for missing in sorted(ids[key] - captured.get(key, set()))
    ]


def _tool_call_problems(
    calls: Sequence[CallFacts],
    owners: Sequence[str | None],
    tool_call_ids: Mapping[str, frozenset[str]],
) -> list[str]:
    """Each native tool-call id of a participant must be emitted by one of its calls."""
    emitted: dict[str, set[str]] = {}
    rows = zip(shared_of(calls), outputs_of(calls), owners, strict=True)
    for facts, (_, tools), owner in rows:
        if owner is not None and facts.kind == "generation":
            emitted.setdefault(owner, set()).update(t.id for t in tools if t.id)
    return [
        f"{key}: native tool call {missing} is in no captured output"
        for key in sorted(tool_call_ids)
        for missing in sorted(tool_call_ids[key] - emitted.get(key, set()))
    ]


def coverage_mismatch(coverage: Coverage) -> list[str]:
    """The capture error's message when a checked coverage does not match; else none."""
    if not coverage.checked or coverage.ok:
        return []
    return [
        f"native output coverage ({coverage.basis}): {coverage.found}/{coverage.expected} matched"
    ]


def lifecycle(native: NativeCapture | None, participant_ids: Mapping[str, str]) -> Lifecycle:
    """The native lifecycle with participant keys mapped to ids. Unknown is never complete."""
    if native is None:
        return Lifecycle(status="unsupported", pending_participant_ids=[])
    lc = native.lifecycle
    pending = [participant_ids[k] for k in lc.pending_keys if k in participant_ids]
    status = lc.status
    if status == "complete" and pending:
        status = "pending"
    return Lifecycle(status=status, pending_participant_ids=pending)

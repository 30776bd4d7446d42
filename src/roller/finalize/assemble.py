"""The assemble stage: the records and the manifest, from what the other stages decided.

`assemble(CaptureParts) -> FinalizedCapture` only builds: every status, id, relation
and the retention decision arrive in `CaptureParts` (`roller.finalize.pipeline` runs
the stages). Pure and deterministic: the same parts give the same records, byte for
byte. Rules kept:
- raw/ not retained (`Verdict.retained`): no `raw_path`, native evidence
  `retained: false` in participants and relations, and no response body to write;
- timestamps are the tape's and the collecting process's `time.time_ns()`, rendered
  once (`shell.rfc3339`);
- a call's record is its shell (`roller.finalize.shell`: what decode alone knows, where
  a tool call whose output carries no id shows the harness-assigned one as its `ref`)
  completed with what the stages decided (`decide`).
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from roller.capture.models import (
    AttemptInputs,
    CallRecord,
    Capabilities,
    CaptureErrorRecord,
    Counts,
    Coverage,
    Evidence,
    ExecutionStatus,
    InheritedContextRecord,
    Lifecycle,
    Manifest,
    ParticipantRecord,
    RelationRecord,
    StorageLayout,
    ToolIdMapping,
    TurnRecord,
)
from roller.capture.models.numbered import call_evidence, selected_ids
from roller.finalize import derived
from roller.finalize.attribute import AttributionResult
from roller.finalize.call_facts import CallFacts
from roller.finalize.decode import DecodedCall
from roller.finalize.ids import CaptureIds
from roller.finalize.kept_facts import outputs_of, response_id_of, shared_of
from roller.finalize.relate import Related
from roller.finalize.shell import call_shell
from roller.finalize.status import CallStatus, Verdict
from roller.harnesses.base import NativeCapture


@dataclass(frozen=True)
class FinalizedCapture:
    calls: list[CallRecord]
    relations: list[RelationRecord]
    manifest: Manifest
    response_bodies: dict[str, bytes]  # call_id -> raw body, written under raw/ if retained


@dataclass(frozen=True)
class CaptureParts:
    """Each stage's output, as assembly reads it."""

    inputs: AttemptInputs
    native: NativeCapture | None
    calls: Sequence[CallFacts]  # decode
    attributed: AttributionResult  # attribute
    ids: CaptureIds
    related: Related  # relate
    statuses: Sequence[CallStatus]  # status, per call
    verdict: Verdict  # status, the capture
    coverage: Coverage
    lifecycle: Lifecycle
    execution: ExecutionStatus
    turns: list[TurnRecord] | None
    errors: list[CaptureErrorRecord]
    inherited: Mapping[str, InheritedContextRecord | None]  # status: a fork's copied prefix


def assemble(parts: CaptureParts, calls: Sequence[DecodedCall]) -> FinalizedCapture:
    """Every record in memory (`roller.finalize.attempt` streams them instead)."""
    records: list[CallRecord] = []
    bodies: dict[str, bytes] = {}
    for i, call in enumerate(calls):
        records.append(call_record(parts, i, call))
        if parts.verdict.retained and call.exchange.response is not None:
            bodies[parts.ids.calls[i]] = call.exchange.body
    relations = list(relation_records(parts))
    return FinalizedCapture(records, relations, manifest(parts, len(relations)), bodies)


def call_record(parts: CaptureParts, i: int, call: DecodedCall) -> CallRecord:
    """The record of call i, from its decoded call and what the stages decided of it."""
    return decide(parts, i, call_shell(call, parts.ids.calls[i], parts.related.tool_ids[i]))


def decide(parts: CaptureParts, i: int, shell: CallRecord) -> CallRecord:
    """A call's shell (`call_shell`) completed with what the stages decided of call i:
    its participant, attribution, capture and export statuses, errors, `raw_path`, and
    the store's identity facts of its output."""
    attr, status = parts.attributed.calls[i], parts.statuses[i]
    pids = parts.ids.participants
    raw_path = (
        f"raw/responses/{shell.call_id}.body"
        if parts.verdict.retained and shell.response.raw_sha256 is not None
        else None
    )
    return shell.model_copy(
        update={
            "participant_id": pids[attr.participant_key] if attr.participant_key else None,
            "response": shell.response.model_copy(update={"raw_path": raw_path}),
            "attribution": attr.attribution,
            "identity_status": attr.status,
            "capture_status": status.capture,
            "export_status": status.export,
            "export_blocked_by": status.blocked,
            "errors": status.errors,
            **store_identity(parts, i, shell.native_identity),
        }
    )


def relation_records(parts: CaptureParts) -> Iterator[RelationRecord]:
    """Every relation in order, as it reads once raw/ is cleaned or kept."""
    for relation in parts.related.iter_relations():
        yield _as_published(parts, relation)


def _as_published(parts: CaptureParts, relation: RelationRecord) -> RelationRecord:
    return relation if parts.verdict.retained else _without_native_sources(relation)


def relation_lines(parts: CaptureParts) -> Iterator[bytes]:
    """`relation_records` as the lines of relations.jsonl: the derived relations (most
    of them; no native source to clear) written straight from their facts."""
    for relation in parts.related.bound:
        yield _as_published(parts, relation).model_dump_json(by_alias=True).encode() + b"\n"
    lines = derived.Lines()
    for d, relation_id in parts.related.iter_derived():
        yield lines.line(d, relation_id)


def manifest(parts: CaptureParts, relations: int, layout: StorageLayout = "compact/v2") -> Manifest:
    """The manifest (its `files` left empty: the writer fills them from the bytes)."""
    participants = _participants(parts)
    found = _manifest(parts, _counts(parts, relations, participants), participants)
    return found if layout == "compact/v2" else found.model_copy(update={"storage_layout": layout})


def _participants(parts: CaptureParts) -> list[ParticipantRecord]:
    """The participants, their per-call lists numbered (`roller.capture.models.numbered`:
    8 bytes a call where a string or an `Evidence` costs ~0.1-0.5 KB)."""
    pids, call_ids, retained = parts.ids.participants, parts.ids.calls, parts.verdict.retained
    own: dict[str | None, array[int]] = defaultdict(lambda: array("q"))  # one pass
    for i, owner in enumerate(parts.attributed.owners):
        own[owner].append(i)
    return [
        ParticipantRecord(
            participant_id=pids[d.key],
            role=d.role,
            parent_participant_id=pids.get(d.parent_key) if d.parent_key else None,
            depth=d.depth,
            native_ids=d.native_ids,
            name=d.name,
            state=d.state,
            call_ids=selected_ids(call_ids, own.get(d.key, ())),
            evidence=call_evidence(
                call_ids,
                d.call_evidence,
                before=[
                    Evidence(source=f"native:{e.path}", ref=e.ref, retained=retained)
                    for e in d.evidence
                ],
                after=[Evidence(source="declared:single_agent", ref=None, retained=True)]
                if d.declared
                else [],
            ),
            inherited_context=parts.inherited.get(d.key),
        )
        for d in parts.attributed.participants
    ]


def _manifest(
    parts: CaptureParts, counts: Counts, participants: list[ParticipantRecord]
) -> Manifest:
    inputs = parts.inputs
    return Manifest(
        schema_="roller.capture/v1",
        storage_layout="compact/v2",
        capture_scope=parts.ids.scope,
        harness=inputs.harness,
        sample_id=inputs.sample_id,
        attempt=inputs.attempt,
        started_at=inputs.started_at,
        ended_at=inputs.ended_at or inputs.started_at,
        exit_code=inputs.exit_code,
        execution_status=parts.execution,
        capture_status="complete" if parts.verdict.complete else "partial",
        capture_errors=parts.errors,
        participants=participants,
        capabilities=_capabilities(parts.native, parts.coverage, parts.attributed),
        coverage=parts.coverage,
        lifecycle=parts.lifecycle,
        debug_retention=inputs.debug_retention,
        raw_retained=parts.verdict.retained,
        counts=counts,
        files={},
        tool_id_map=_tool_id_map(parts) or None,
        turns=parts.turns,
    )


def _tool_id_map(parts: CaptureParts) -> list[ToolIdMapping]:
    """Each output tool-call id the results carry under another id (`replayed_tool_ids`),
    and whether a later call of the same participant carries one under it."""
    out: list[ToolIdMapping] = []
    if parts.native is None or not parts.native.replayed_tool_ids:
        return out  # an id differs from its output's only where it is replayed under another
    owners, index = parts.attributed.owners, parts.related.index
    outputs = outputs_of(parts.calls)
    for i, ((_, emitted), ids) in enumerate(zip(outputs, parts.related.tool_ids, strict=True)):
        for tool, context_id in zip(emitted, ids, strict=True):
            if tool.id is None or context_id is None or context_id == tool.id:
                continue
            owner = owners[i]
            later = index.later_of_participant(owner, i) if owner is not None else ()
            out.append(
                ToolIdMapping(
                    call_id=parts.ids.calls[i],
                    output_id=tool.id,
                    context_id=context_id,
                    seen=bool(index.carrying(later, context_id)),
                )
            )
    return out


def store_identity(
    parts: CaptureParts, i: int, wire: Mapping[str, str]
) -> dict[str, dict[str, str]]:
    """Call i's `native_identity` update, when the harness's store records facts of its
    output (`call_native_ids`, e.g. OpenClaw's run) and it is attributed by response id:
    the wire's evidence plus those; else nothing (most calls)."""
    attr = parts.attributed.calls[i]
    if parts.native is None or attr.participant_key is None:
        return {}  # the call's facts not even read (they are rebuilt from a row)
    response_id = response_id_of(parts.calls, i)
    if not response_id:
        return {}
    facts = parts.native.call_native_ids.get(response_id)
    return {"native_identity": {**wire, **facts}} if facts else {}


def _capabilities(
    native: NativeCapture | None, coverage: Coverage, attributed: AttributionResult
) -> Capabilities:
    notes = (
        list(native.coverage.notes)
        + [f"main_trajectory_export_blocked: {b}" for b in native.main_trajectory_blocked_by]
        if native is not None
        else []
    )
    if attributed.declaration == "overridden":
        notes.append(
            "declared_single_agent_overridden: x-roller-* headers declare the participants, "
            "so they decide and the single-agent declaration does not apply"
        )
    return Capabilities(
        subtasks=native.subtasks if native is not None else "unknown",
        native_output_coverage=coverage.basis,
        notes=notes,
        identity_evidence="declared_single_agent" if attributed.declaration == "applied" else None,
    )


def _counts(
    parts: CaptureParts, relations: int, participants: Sequence[ParticipantRecord]
) -> Counts:
    identities = [a.status for a in parts.attributed.calls]
    return Counts(
        calls=len(parts.calls),
        generation_calls=sum(1 for s in shared_of(parts.calls) if s.kind == "generation"),
        attributed_calls=identities.count("attributed"),
        unattributed_calls=identities.count("unattributed"),
        ambiguous_calls=identities.count("ambiguous"),
        exportable_calls=sum(1 for s in parts.statuses if s.export == "exportable"),
        relations=relations,
        participants=len(participants),
    )


def _without_native_sources(relation: RelationRecord) -> RelationRecord:
    """The relation as it reads once raw/ (and the native logs in it) is cleaned."""
    if not any(e.source.startswith("native:") for e in relation.evidence):
        return relation  # most relations (derived from calls): nothing to clear, no copy
    evidence = [
        e.model_copy(update={"retained": False}) if e.source.startswith("native:") else e
        for e in relation.evidence
    ]
    return relation.model_copy(update={"evidence": evidence})

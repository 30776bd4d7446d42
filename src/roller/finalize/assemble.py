"""Assembling the capture: calls, relations, participants and the manifest.

`build_capture` is pure and deterministic: the same tape, native capture and attempt
inputs always give the same records, byte for byte (ids come from the attempt's capture
scope and the arrival order at the proxy, never from a clock or a random source).

Retention (`--capture-debug`): `on-error` keeps raw/ when the harness did not complete,
the capture is partial, a model call failed or was interrupted, or a subtask failed;
`full` always keeps it; `off` never does. The decision is made before the records are
built, so a cleaned capture's records already say `raw_path: null` and evidence
`retained: false`, and no status depends on whether raw/ survived.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count

from roller.capture.files import sha256_hex
from roller.capture.models import (
    AttemptInputs,
    CallRecord,
    Capabilities,
    CaptureErrorRecord,
    CaptureStatus,
    Counts,
    EmittedToolRef,
    Evidence,
    ExportBlock,
    ExportStatus,
    IdentityStatus,
    Manifest,
    OutputCoverage,
    ParticipantRecord,
    RelationRecord,
    RequestInfo,
    ResponseInfo,
    ResultToolRef,
    ToolRefs,
    UsageInfo,
)
from roller.capture.statuses import StatusInputs, capture_status, export_status
from roller.capture.tape import TapeReadResult
from roller.finalize.attribute import (
    AttributionResult,
    CallAttribution,
    ParticipantDraft,
    attribute,
    parent_disagreements,
)
from roller.finalize.coverage import check_coverage, lifecycle
from roller.finalize.decode import DecodedCall, decode_exchange
from roller.finalize.relations import (
    CallIndex,
    ToolIds,
    bind_native,
    derive_in_context,
    tool_refs_of,
)
from roller.finalize.turns import attempt_execution, turn_records
from roller.harnesses.base import NativeCapture


@dataclass(frozen=True)
class FinalizedCapture:
    calls: list[CallRecord]
    relations: list[RelationRecord]
    manifest: Manifest
    response_bodies: dict[str, bytes]  # call_id -> raw body, written under raw/ if retained


def rfc3339(ns: int | None) -> str | None:
    if ns is None:
        return None
    dt = datetime.fromtimestamp(ns / 1e9, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _status_inputs(call: DecodedCall, identity_status: IdentityStatus, errors: int) -> StatusInputs:
    return StatusInputs(
        kind=call.kind,
        execution_status=call.execution_status,
        response_capture_status=call.response_capture_status,
        context_parsed=call.context_ok,
        output_complete=bool(call.reassembly and call.reassembly.complete),
        tool_call_without_identity=call.tool_call_without_identity,
        identity_status=identity_status,
        model=call.model,
        response_model=call.response_model,
        error_count=errors,
    )


def _participant_ids(scope: str, drafts: Sequence[ParticipantDraft]) -> dict[str, str]:
    return {d.key: f"agent-{scope}-{n:02d}" for n, d in enumerate(drafts, 1)}


def build_capture(
    inputs: AttemptInputs,
    tape: TapeReadResult,
    native: NativeCapture | None,
) -> FinalizedCapture:
    scope = inputs.capture_scope
    decoded = [
        decode_exchange(seq, ex, inputs.harness.name) for seq, ex in enumerate(tape.exchanges)
    ]
    call_ids = [f"call-{scope}-{d.sequence:05d}" for d in decoded]
    attributed: AttributionResult = attribute(
        decoded, native, single_agent=bool(inputs.declared_single_agent)
    )
    owners = [a.participant_key for a in attributed.calls]
    pids = _participant_ids(scope, attributed.participants)

    capture_errors = [CaptureErrorRecord(code="tape_problem", message=p) for p in tape.problems]
    if native is not None:
        capture_errors += [
            CaptureErrorRecord(code="native_log_problem", message=p) for p in native.problems
        ]
    tool_ids, tool_id_problems = tool_refs_of(decoded, native)
    capture_errors += [
        CaptureErrorRecord(code="native_log_problem", message=p) for p in tool_id_problems
    ]

    # Per-call statuses first: retention depends on them, records depend on retention.
    per_call = []
    for call, attr in zip(decoded, attributed.calls, strict=True):
        errors = [CaptureErrorRecord(code=c, message=m) for c, m in call.errors]
        s = _status_inputs(call, attr.status, len(errors))
        per_call.append((capture_status(s), *export_status(s), errors))

    coverage = check_coverage(decoded, owners, native)
    lc = lifecycle(native, pids)
    execution = attempt_execution(inputs)
    unattributed = sum(
        1
        for call, a in zip(decoded, attributed.calls, strict=True)
        if call.kind == "generation" and a.status != "attributed"
    )
    if unattributed:
        capture_errors.append(
            CaptureErrorRecord(
                code="unattributed_calls",
                message=f"{unattributed} generation call(s) could not be attributed by evidence",
            )
        )
    capture_errors += [
        CaptureErrorRecord(code="parent_disagreement", message=m)
        for m in parent_disagreements(attributed, call_ids, pids)
    ]
    if coverage.checked and not coverage.ok:
        capture_errors.append(
            CaptureErrorRecord(
                code="coverage_mismatch",
                message=f"native output coverage ({coverage.basis}): "
                f"{coverage.found}/{coverage.expected} matched",
            )
        )
    if inputs.launch_error:
        capture_errors.append(CaptureErrorRecord(code="launch_error", message=inputs.launch_error))
    turns, turn_errors = turn_records(
        inputs, [d.exchange.request_time_ns for d in decoded], call_ids, rfc3339
    )
    capture_errors += turn_errors

    relation_counter = count(1)

    def new_relation_id() -> str:
        return f"rel-{scope}-{next(relation_counter):05d}"

    calls_partial = any(p[0] != "complete" for p in per_call)
    lifecycle_open = lc.status in ("pending", "unknown")
    child_failed = any(d.state == "failed" for d in attributed.participants)
    call_failed = any(c.execution_status != "completed" for c in decoded)

    def decide_retention(relations_unknown: bool) -> bool:
        if inputs.debug_retention == "full":
            return True
        if inputs.debug_retention == "off":
            return False
        partial = calls_partial or bool(capture_errors) or lifecycle_open or relations_unknown
        return execution != "completed" or partial or call_failed or child_failed

    index = CallIndex(decoded, call_ids, owners, pids, tool_ids=tool_ids)
    relations = bind_native(index, native, new_relation_id) if native is not None else []
    relations_unknown = any(r.status == "unknown" for r in relations)
    relations += derive_in_context(index, native, new_relation_id, relations)
    retained = decide_retention(relations_unknown)
    if not retained:
        relations = [_without_native_sources(r) for r in relations]
    if relations_unknown:
        capture_errors.append(
            CaptureErrorRecord(
                code="relations_unknown",
                message=f"{sum(1 for r in relations if r.status == 'unknown')} native "
                "relation(s) could not be bound to calls uniquely",
            )
        )

    records: list[CallRecord] = []
    bodies: dict[str, bytes] = {}
    for call, cid, attr, (cap, exp, blocked, errors), ids in zip(
        decoded, call_ids, attributed.calls, per_call, tool_ids, strict=True
    ):
        records.append(
            _call_record(call, cid, pids, attr, cap, exp, blocked, errors, retained, ids)
        )
        if retained and call.exchange.response is not None:
            bodies[cid] = call.exchange.body

    participants = [
        ParticipantRecord(
            participant_id=pids[d.key],
            role=d.role,
            parent_participant_id=pids.get(d.parent_key) if d.parent_key else None,
            depth=d.depth,
            native_ids=d.native_ids,
            name=d.name,
            state=d.state,
            call_ids=[cid for cid, owner in zip(call_ids, owners, strict=True) if owner == d.key],
            evidence=[
                Evidence(source=f"native:{e.path}", ref=e.ref, retained=retained)
                for e in d.evidence
            ]
            + [
                Evidence(source=f"call:{call_ids[i]}", ref=None, retained=True)
                for i in d.call_evidence
            ]
            + (
                [Evidence(source="declared:single_agent", ref=None, retained=True)]
                if d.declared
                else []
            ),
        )
        for d in attributed.participants
    ]

    complete = (
        not calls_partial
        and not capture_errors
        and not lifecycle_open
        and (coverage.ok or not coverage.checked)
    )
    manifest = Manifest(
        schema_="roller.capture/v1",
        storage_layout="compact/v2",
        capture_scope=scope,
        harness=inputs.harness,
        sample_id=inputs.sample_id,
        attempt=inputs.attempt,
        started_at=inputs.started_at,
        ended_at=inputs.ended_at or inputs.started_at,
        exit_code=inputs.exit_code,
        execution_status=execution,
        capture_status="complete" if complete else "partial",
        capture_errors=capture_errors,
        participants=participants,
        capabilities=_capabilities(native, coverage.basis, attributed),
        coverage=coverage,
        lifecycle=lc,
        debug_retention=inputs.debug_retention,
        raw_retained=retained,
        counts=Counts(
            calls=len(records),
            generation_calls=sum(1 for r in records if r.kind == "generation"),
            attributed_calls=sum(1 for r in records if r.identity_status == "attributed"),
            unattributed_calls=sum(1 for r in records if r.identity_status == "unattributed"),
            ambiguous_calls=sum(1 for r in records if r.identity_status == "ambiguous"),
            exportable_calls=sum(1 for r in records if r.export_status == "exportable"),
            relations=len(relations),
            participants=len(participants),
        ),
        files={},
        turns=turns,
    )
    return FinalizedCapture(records, relations, manifest, bodies)


def _capabilities(
    native: NativeCapture | None, basis: OutputCoverage, attributed: AttributionResult
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
        native_output_coverage=basis,
        notes=notes,
        identity_evidence="declared_single_agent" if attributed.declaration == "applied" else None,
    )


def _call_record(
    call: DecodedCall,
    call_id: str,
    pids: dict[str, str],
    attr: CallAttribution,
    cap: CaptureStatus,
    exp: ExportStatus,
    blocked: list[ExportBlock],
    errors: list[CaptureErrorRecord],
    retained: bool,
    tool_ids: ToolIds,
) -> CallRecord:
    ex = call.exchange
    meta = ex.request
    resp = ex.response
    first_byte = ex.chunks[0][0] if ex.chunks else None
    usage = call.usage
    has_response = resp is not None
    return CallRecord(
        schema_="roller.call/v1",
        call_id=call_id,
        sequence=call.sequence,
        exchange_id=ex.exchange_id,
        participant_id=pids[attr.participant_key] if attr.participant_key else None,
        kind=call.kind,
        protocol=call.protocol,
        json_mode=call.json_mode,
        request=RequestInfo(
            method=str(meta.get("method", "")),
            path=str(meta.get("path", "")),
            query=[(str(k), str(v)) for k, v in meta.get("query") or []],
            headers=[(str(k), str(v)) for k, v in meta.get("headers") or []],
            redacted=_redacted_names(meta.get("redacted")),
            received_at=rfc3339(ex.request_time_ns) or "",
        ),
        context=call.context,
        context_sha256=call.context_sha256,
        context_bytes=len(ex.request_body),
        output=call.reassembly.output if call.reassembly else None,
        output_complete=bool(call.reassembly and call.reassembly.complete),
        output_incomplete_reason=call.reassembly.incomplete_reason if call.reassembly else None,
        output_problems=list(call.reassembly.problems) if call.reassembly else [],
        output_unmerged=list(call.reassembly.unmerged) if call.reassembly else [],
        provider_error=call.reassembly.error if call.reassembly else None,
        response=ResponseInfo(
            status=int(resp["status"])
            if resp is not None and resp.get("status") is not None
            else None,
            headers=[(str(k), str(v)) for k, v in (resp or {}).get("headers") or []],
            streamed=call.streamed,
            outcome=call.outcome,
            raw_path=f"raw/responses/{call_id}.body" if retained and has_response else None,
            raw_sha256=sha256_hex(ex.body) if has_response else None,
            bytes=len(ex.body),
            content_encoding=call.content_encoding,
            first_byte_at=rfc3339(first_byte),
            ended_at=rfc3339(ex.end_time_ns),
        ),
        model=call.model,
        response_model=call.response_model,
        response_id=call.response_id,
        finish_reason=call.finish_reason,
        usage=UsageInfo(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            total_tokens=usage.total_tokens,
        )
        if usage is not None
        else None,
        stream=call.request_stream,
        native_identity={k: str(v) for k, v in call.identity.evidence.items()},
        attribution=attr.attribution,
        tool_refs=ToolRefs(
            emitted=[
                EmittedToolRef(
                    id=t.id,
                    name=t.name,
                    item_id=t.item_id,
                    namespace=t.namespace,
                    # the harness-assigned id stands in when the output carries none
                    ref=t.ref if t.ref is not None else tid,
                )
                for t, tid in zip(call.emitted, tool_ids, strict=True)
            ],
            results=[
                ResultToolRef(
                    id=r.id,
                    name=r.name,
                    item_id=r.item_id,
                    message_index=r.message_index,
                    is_error=r.is_error,
                )
                for r in call.results
            ],
        ),
        execution_status=call.execution_status,
        response_capture_status=call.response_capture_status,
        identity_status=attr.status,
        capture_status=cap,
        export_status=exp,
        export_blocked_by=blocked,
        errors=errors,
    )


def _redacted_names(redacted: object) -> list[str]:
    """Names of removed headers and query parameters (the tape keeps them apart)."""
    if isinstance(redacted, dict):
        return [str(x) for key in ("headers", "query") for x in redacted.get(key) or []]
    if isinstance(redacted, list):
        return [str(x) for x in redacted]
    return []


def _without_native_sources(relation: RelationRecord) -> RelationRecord:
    """The relation as it reads once raw/ (and the native logs in it) is cleaned."""
    evidence = [
        e.model_copy(update={"retained": False}) if e.source.startswith("native:") else e
        for e in relation.evidence
    ]
    return relation.model_copy(update={"evidence": evidence})

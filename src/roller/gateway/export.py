"""Per-call export of gateway calls: the capture export's record shape, from the tape.

The gateway database says which tape exchange each call is and whose session it is; the
tape holds the bytes. Each call is decoded with `roller.finalize.decode.decode_exchange`
(the same decoder a capture is finalized with) under its session's declared harness, and
its export status comes from `roller.capture.statuses` (the same rules, so "exportable"
means one thing everywhere). The participant of a gateway call is its session row.

Rules kept: a call whose tape exchange is missing, or whose participant is unknown
(source-keyed, or its own id was rejected), is never exportable; blocked calls leave only
when asked for, each saying why. One bad call never aborts an export: a body the decoder
cannot read is a blocked record saying why (lossless: the bytes stay on the tape), and a
record that cannot be built at all is skipped and counted with its reason (`Skipped`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from roller.capture.models import IdentityStatus
from roller.capture.statuses import export_status
from roller.capture.tape import TapeExchange, read_tape
from roller.export.calls import build_record
from roller.finalize.decode import DecodedCall, decode_exchange
from roller.gateway.store import Call, RuntimeSession, SessionStore
from roller.harnesses.registry import UNDECLARED


def _participant(row: RuntimeSession | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "participant_id": row.id,
        "role": row.role,
        "parent_participant_id": row.parent_session_id,
        "depth": None,
        "name": f"{row.source_type}:{row.source_id}",
    }


@dataclass(frozen=True, slots=True)
class Skipped:
    """A call whose record could not be built: its id and why."""

    call_id: str
    exchange_id: str
    reason: str


def gateway_records(
    store: SessionStore,
    *,
    account: str | None = None,
    include_blocked: bool = False,
    skipped: list[Skipped] | None = None,
) -> Iterator[dict[str, Any]]:
    """Each call's record, oldest first; one that cannot be built is appended to
    `skipped` (when given) instead of ending the export."""
    sessions = {row.id: row for row in store.sessions(account)}
    tapes: dict[str, dict[str, TapeExchange]] = {}
    for sequence, call in enumerate(store.calls()):
        if account is not None and call.account != account:
            continue
        if call.tape_dir not in tapes:
            tapes[call.tape_dir] = read_tape(call.tape_dir).by_id()
        row = sessions.get(call.session_id or "")
        try:
            record = _record(sequence, call, row, tapes[call.tape_dir])
        except Exception as exc:  # noqa: BLE001 - a decoder bug costs this record, not the export
            reason = f"{type(exc).__name__}: {exc}"[:500]
            if skipped is not None:
                skipped.append(Skipped(call.id, call.exchange_id, reason))
            continue
        if record["export_status"] == "exportable" or include_blocked:
            yield record


def _usage(decoded: DecodedCall) -> dict[str, int | None] | None:
    usage = decoded.usage
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "total_tokens": usage.total_tokens,
    }


def _missing(
    call: Call, source: dict[str, Any], participant: dict[str, Any] | None
) -> dict[str, Any]:
    """The record of a call whose exchange is not on its tape: what the row says, blocked."""
    return build_record(
        call_id=call.id,
        source=source,
        participant=participant,
        protocol=call.protocol,
        model=call.model,
        response_model=None,
        request=None,
        response=None,
        usage=None,
        tool_calls=[],
        export_status="blocked",
        export_blocked_by=["tape_exchange_missing"],
    )


def _record(
    sequence: int, call: Call, row: RuntimeSession | None, exchanges: dict[str, TapeExchange]
) -> dict[str, Any]:
    source = {
        "gateway_tape": call.tape_dir,
        "exchange_id": call.exchange_id,
        "account": call.account,
        "principal": call.principal,
        "harness": None if row is None else row.harness,
    }
    participant = _participant(row)
    exchange = exchanges.get(call.exchange_id)
    if exchange is None:
        return _missing(call, source, participant)
    decoded = decode_exchange(sequence, exchange, UNDECLARED if row is None else row.harness)
    attributed = row is not None and not call.participant_unknown
    identity: IdentityStatus = "attributed" if attributed else "unattributed"
    status, blocked = export_status(decoded.status_inputs(identity, len(decoded.errors)))
    record = build_record(
        call_id=call.id,
        source=source,
        participant=participant,
        protocol=decoded.protocol,
        model=decoded.model,
        response_model=decoded.response_model,
        request=decoded.context,
        response=decoded.reassembly.output if decoded.reassembly else None,
        usage=_usage(decoded),
        tool_calls=[
            {
                "id": t.id,
                "name": t.name,
                "item_id": t.item_id,
                "namespace": t.namespace,
                "ref": t.ref,
            }
            for t in decoded.emitted
        ],
        export_status=status,
        export_blocked_by=list(blocked),
    )
    record["execution_status"] = decoded.execution_status
    # Why a call is blocked when its bytes could not be read (the bytes stay on the tape).
    record["errors"] = [{"code": code, "message": message} for code, message in decoded.errors]
    return record

"""The status rulebook: every status rule of `docs/protocol.md` ("Statuses"), as pure
functions. Finalize derives a call's statuses with them, the gateway its call rows' (same
functions, same facts), and `roller validate` checks records on disk with them, so the
writer, the gateway and the checker can never disagree.

Execution (`execution_status`, did the call finish executing?) — `execution_status`:
1. `interrupted`: the exchange was cut short before it ended on its own — the client went
   away (`client_disconnected`), the proxy stopped (`proxy_shutdown`), or the tape stopped
   with it in flight (no `end` frame) — unless the response was already whole (below).
2. `failed`: the request never got an upstream answer (`upstream_connect_error`,
   `upstream_disconnected`, `upstream_timeout`, `no_upstream`, `rejected`,
   `proxy_error`), no response head arrived, the status is 400 or more, or a codec read
   the body and it did not reach its protocol's terminal event or carried an error (a
   stream that ended without `message_stop`, `[DONE]`, `response.completed`, a Gemini
   `finishReason`; an error event; an error object in a 2xx body).
3. `completed`: otherwise. A side request no codec reads (count-tokens, model list) is
   judged by its outcome and status alone.
"Whole" (`response_was_whole`): a head below 400 arrived, the response is an SSE stream a
codec read to its terminal event without an error, and every byte the upstream sent was
relayed to the client (`client_bytes == response_bytes ==` the recorded body). A client
that hangs up then did not interrupt the call (Codex drops a finished Responses stream
without reading the chunked terminator, so the proxy sees it leave a moment before the
end); nor did a proxy that stopped then.

Response capture (`response_capture_status`, was the response recorded completely?):
`missing` when no response head arrived; `complete` when the exchange ended `ok`, or was
cut short after the response was whole; else `partial`.

Identity (`identity_status`) is attribution's verdict (`roller.finalize.attribute`), not a
rule of this module: `attributed` for exactly one participant by evidence, `ambiguous`
for several, `unattributed` for none; the gateway's rows are attributed by their session
row unless the participant is unknown.

Capture (`capture_status`): `complete` when the request body parsed, the response was
captured completely, reassembly reached the protocol's terminal event, and the output
does not claim tool calls without naming them; else `partial`. A side request (not a
generation call: a model list, a token count, a probe no codec reads) has no terminal
event to reach: its record is complete when its body parsed and its response was
captured completely (Hermes probes `GET /api/v1/models` on every run).

Export (`export_status`, `export_blocked_by`): a call is exportable only when it is a
generation call, it finished executing, the response was recorded completely,
reassembly reached the protocol's terminal event, it does not claim tool calls without
naming them, its participant is known unambiguously, the response model matches the
request (or is its dated snapshot), and it has no capture errors; every failed condition
is one `ExportBlock`, in that order.

The capture as a whole (the manifest's `execution_status`, `capture_status`) is derived
by finalize from the harness run and these per-call statuses.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from roller.capture.models import (
    CaptureStatus,
    ExecutionStatus,
    ExportBlock,
    ExportStatus,
    IdentityStatus,
    ResponseCaptureStatus,
)

IN_FLIGHT = "in_flight"  # the outcome of an exchange the tape holds no `end` frame for
# Outcomes (`roller.capture.tape`) that cut an exchange short, and those that mean the
# request never got an upstream answer.
CUT_SHORT: frozenset[str] = frozenset({"client_disconnected", "proxy_shutdown", IN_FLIGHT})
NOT_ANSWERED: frozenset[str] = frozenset(
    {
        "upstream_connect_error",
        "upstream_disconnected",
        "upstream_timeout",
        "no_upstream",
        "rejected",
        "proxy_error",
    }
)


@dataclass(frozen=True, slots=True)
class ExchangeFacts:
    """How one exchange ended at the proxy and what its response says: everything the
    execution and response-capture statuses depend on. Build it with `of`."""

    outcome: str  # the `end` frame's outcome; IN_FLIGHT without one
    status: int | None  # the upstream response status; None: no response head arrived
    streamed: bool  # the response is an SSE stream
    relayed_all: bool  # every byte the upstream sent reached the client
    terminal: bool | None  # a codec read it to its terminal event, no error (None: unread)

    @staticmethod
    def of(
        *,
        outcome: str | None,
        status: int | None,
        streamed: bool,
        client_bytes: object,
        response_bytes: object,
        body_bytes: int,
        terminal: bool | None,
    ) -> ExchangeFacts:
        """The facts from the `end` frame's fields (None outcome: no `end` frame) and the
        response reading (`roller.wire.response.ResponseReading.terminal`)."""
        return ExchangeFacts(
            outcome=IN_FLIGHT if outcome is None else outcome,
            status=status,
            streamed=streamed,
            relayed_all=relayed_all(client_bytes, response_bytes, body_bytes),
            terminal=terminal,
        )


def relayed_all(client_bytes: object, response_bytes: object, body_bytes: int) -> bool:
    """Every byte the upstream sent reached the client (`ExchangeFacts.relayed_all`)."""
    return client_bytes is not None and client_bytes == response_bytes == body_bytes


@functools.lru_cache(maxsize=4096)
def statuses_of(
    outcome: str, status: int | None, streamed: bool, relayed_all: bool, terminal: bool | None
) -> tuple[ExecutionStatus, ResponseCaptureStatus]:
    """`execution_status` and `response_capture_status` of the `ExchangeFacts` of these
    fields, remembered per distinct facts: a gateway judges every call it records, and
    nearly all of them end alike."""
    facts = ExchangeFacts(outcome, status, streamed, relayed_all, terminal)
    return execution_status(facts), response_capture_status(facts)


def response_was_whole(f: ExchangeFacts) -> bool:
    """The whole response reached the client (see the module docstring)."""
    return (
        f.status is not None
        and f.status < 400
        and f.streamed
        and f.terminal is True
        and f.relayed_all
    )


def execution_status(f: ExchangeFacts) -> ExecutionStatus:
    """Did the call finish executing? (rules 1-3 of the module docstring)"""
    if f.outcome in CUT_SHORT and not response_was_whole(f):
        return "interrupted"
    if f.outcome in NOT_ANSWERED or f.status is None or f.status >= 400 or f.terminal is False:
        return "failed"
    return "completed"


def response_capture_status(f: ExchangeFacts) -> ResponseCaptureStatus:
    """Was the response recorded completely?"""
    if f.status is None:
        return "missing"
    if f.outcome == "ok" or (f.outcome in CUT_SHORT and response_was_whole(f)):
        return "complete"
    return "partial"


# A provider may answer an alias with a dated snapshot: "gpt-4o" -> "gpt-4o-2024-08-06",
# "claude-sonnet-4-5" -> "claude-sonnet-4-5-20250929". Only such a suffix is a match.
_SNAPSHOT_SUFFIX = re.compile(r"^-(\d{8}|\d{4}-\d{2}-\d{2}|\d{3,4})$")


def models_match(requested: str | None, responded: str | None) -> bool:
    """Whether the response model is the requested one (or its dated snapshot).

    Gemini names models `models/<id>` in some places; that prefix is ignored.
    """
    if requested is None or responded is None:
        return False
    req = requested.removeprefix("models/")
    resp = responded.removeprefix("models/")
    if req == resp:
        return True
    return resp.startswith(req) and bool(_SNAPSHOT_SUFFIX.match(resp[len(req) :]))


@dataclass(frozen=True)
class StatusInputs:
    """Everything the derived statuses depend on."""

    kind: str
    execution_status: ExecutionStatus
    response_capture_status: ResponseCaptureStatus
    context_parsed: bool
    output_complete: bool
    tool_call_without_identity: bool
    identity_status: IdentityStatus
    model: str | None
    response_model: str | None
    error_count: int


def capture_status(s: StatusInputs) -> CaptureStatus:
    """A record is complete when both request and response are fully on disk and usable."""
    complete = (
        s.context_parsed
        and s.response_capture_status == "complete"
        and (s.output_complete or s.kind != "generation")
        and not s.tool_call_without_identity
    )
    return "complete" if complete else "partial"


def export_blockers(s: StatusInputs) -> list[ExportBlock]:
    blocked: list[ExportBlock] = []
    if s.kind != "generation":
        blocked.append("not_a_generation")
    if s.execution_status != "completed":
        blocked.append("execution_not_completed")
    if s.response_capture_status != "complete" or not s.context_parsed:
        blocked.append("response_incomplete")
    if not s.output_complete:
        blocked.append("output_incomplete")
    if s.tool_call_without_identity:
        blocked.append("tool_call_without_identity")
    if s.identity_status == "unattributed":
        blocked.append("identity_unattributed")
    elif s.identity_status == "ambiguous":
        blocked.append("identity_ambiguous")
    if s.response_model is None:
        blocked.append("response_model_missing")
    elif not models_match(s.model, s.response_model):
        blocked.append("model_mismatch")
    if s.error_count:
        blocked.append("capture_errors")
    return blocked


def export_status(s: StatusInputs) -> tuple[ExportStatus, list[ExportBlock]]:
    blocked = export_blockers(s)
    return ("blocked" if blocked else "exportable"), blocked

"""The status rules of `docs/protocol.md` ("Statuses"), as pure functions.

Finalize uses them to derive a call's `capture_status`, `export_status` and
`export_blocked_by`; `roller validate` uses the same functions to check that a record on
disk is consistent. Keeping one implementation means the writer and the checker can
never disagree about what "exportable" means.

A call is exportable only when it is a generation call, it finished executing, the
response was recorded completely, reassembly reached the protocol's terminal event, it
does not claim tool calls without naming them, its participant is known unambiguously,
the response model matches the request, and it has no capture errors.
"""

from __future__ import annotations

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
        and s.output_complete
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

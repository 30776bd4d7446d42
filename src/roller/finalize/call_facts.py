"""`CallFacts`: what the stages after decode (attribute, relate, status, assemble) read of
a call — no body, no context.

Every call's facts stay in memory for the whole of finalize (`roller.finalize.
kept_facts`), so a record holds only what is the call's own: its sequence, request
time, response id, the tool calls its output emits (without their `arguments`: no later
stage reads them; the shell took them from the `DecodedCall`) and the ids of the tool
results its context carries (None dropped, each once, for `result_in_context`). The
rest — kind, models, wire identity, statuses, flags, errors — is one `SharedFacts`,
which a participant's calls mostly share (one object, compared equal first); the record
gives each of its fields by name, as `DecodedCall` does, so a stage reads either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roller.capture.models import (
    CallKind,
    ExecutionStatus,
    IdentityStatus,
    ResponseCaptureStatus,
)
from roller.capture.statuses import StatusInputs
from roller.identity import WireIdentity
from roller.wire.types import ToolCall


@dataclass(frozen=True, slots=True)
class SharedFacts:
    """The facts of a call that many calls have alike."""

    kind: CallKind
    model: str | None
    response_model: str | None
    identity: WireIdentity
    context_ok: bool
    output_complete: bool
    tool_call_without_identity: bool
    execution_status: ExecutionStatus
    response_capture_status: ResponseCaptureStatus
    errors: tuple[tuple[str, str], ...]

    def status_inputs(self, identity_status: IdentityStatus, error_count: int) -> StatusInputs:
        """What the status rules need of a call with these facts (all of them shared:
        the status stage decides once for the calls that share them)."""
        return StatusInputs(
            kind=self.kind,
            execution_status=self.execution_status,
            response_capture_status=self.response_capture_status,
            context_parsed=self.context_ok,
            output_complete=self.output_complete,
            tool_call_without_identity=self.tool_call_without_identity,
            identity_status=identity_status,
            model=self.model,
            response_model=self.response_model,
            error_count=error_count,
        )


@dataclass(frozen=True, slots=True)
class CallFacts:
    """A call's own facts and its `SharedFacts` (module docstring). `emitted` and
    `result_ids` are tuples from decode; where finalize keeps the facts, the tool calls
    are made when read and the ids are a view of the conversation's list."""

    sequence: int
    request_time_ns: int
    response_id: str | None
    emitted: Sequence[ToolCall]
    result_ids: Sequence[str]
    shared: SharedFacts

    @property
    def kind(self) -> CallKind:
        return self.shared.kind

    @property
    def model(self) -> str | None:
        return self.shared.model

    @property
    def response_model(self) -> str | None:
        return self.shared.response_model

    @property
    def identity(self) -> WireIdentity:
        return self.shared.identity

    @property
    def context_ok(self) -> bool:
        return self.shared.context_ok

    @property
    def output_complete(self) -> bool:
        return self.shared.output_complete

    @property
    def tool_call_without_identity(self) -> bool:
        return self.shared.tool_call_without_identity

    @property
    def execution_status(self) -> ExecutionStatus:
        return self.shared.execution_status

    @property
    def response_capture_status(self) -> ResponseCaptureStatus:
        return self.shared.response_capture_status

    @property
    def errors(self) -> tuple[tuple[str, str], ...]:
        return self.shared.errors

    def status_inputs(self, identity_status: IdentityStatus, error_count: int) -> StatusInputs:
        """What the capture and export rules (`roller.capture.statuses`) need of this call,
        once its identity is decided; finalize and the gateway's export both ask here."""
        return self.shared.status_inputs(identity_status, error_count)

"""The capture protocol's vocabulary: schema names, every status and kind as a `Literal`,
and the strict base every persisted record derives from (`Record`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

CALL_SCHEMA = "roller.call/v1"
RELATION_SCHEMA = "roller.relation/v1"
CAPTURE_SCHEMA = "roller.capture/v1"
RUN_SCHEMA = "roller.run/v1"
SAMPLE_SCHEMA = "roller.sample/v1"
ATTEMPT_SCHEMA = "roller.attempt/v1"
STORAGE_LAYOUT = "compact/v2"

ExecutionStatus = Literal["completed", "failed", "interrupted"]
ResponseCaptureStatus = Literal["complete", "partial", "missing"]
IdentityStatus = Literal["attributed", "unattributed", "ambiguous"]
CaptureStatus = Literal["complete", "partial"]
ExportStatus = Literal["exportable", "blocked"]
RelationType = Literal[
    "spawn",
    "result_delivered",
    "child_completed",
    "child_failed",
    "result_in_context",
    "launch_acknowledged",
    "launch_ack_in_context",
]
RelationStatus = Literal["established", "unknown"]
# A call's wire parent against the native parent of its participant (`Attribution`).
ParentCrossCheck = Literal["agree", "disagree", "absent"]
Retention = Literal["on-error", "full", "off"]
CallKind = Literal["generation", "token_count", "model_list", "other"]
LifecycleStatus = Literal["complete", "pending", "unknown", "unsupported"]
SubtaskCapability = Literal["supported", "not_available_in_bundled_profile", "unknown"]
# One turn of a multi-turn sample: how its harness run ended, or that it never ran.
TurnStatus = Literal["completed", "failed", "interrupted", "not_run"]
# Identity evidence that is neither native nor on the wire: the user's declaration.
IdentityDeclaration = Literal["declared_single_agent"]
OutputCoverage = Literal[
    "per_message_id",
    "per_session_assistant_count",
    "per_session_count_and_tool_call_ids",
    "token_usage_count",
    "per_response_id",
    "stream_context_count",
    "none",
]

# Reasons a call is blocked from per-call export; `docs/protocol.md` defines each.
ExportBlock = Literal[
    "not_a_generation",
    "execution_not_completed",
    "response_incomplete",
    "output_incomplete",
    "tool_call_without_identity",
    "identity_unattributed",
    "identity_ambiguous",
    "model_mismatch",
    "response_model_missing",
    "capture_errors",
]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


StorageLayout = Literal["compact/v2", "compact/v3"]
STORAGE_LAYOUTS: tuple[StorageLayout, ...] = ("compact/v2", "compact/v3")


def absent(value: object) -> bool:
    """An optional field added after v1 shipped is left out when unset, so a record that
    does not use it is byte for byte what it was before the field existed."""
    return value is None


Header = tuple[str, str]

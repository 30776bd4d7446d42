"""The relation record (`roller.relation/v1`, one line of relations.jsonl): a link between
calls or participants, with the evidence that establishes it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from roller.capture.models.call import (
    Evidence,
)
from roller.capture.models.vocabulary import (
    Record,
    RelationStatus,
    RelationType,
)


class ModelToolRef(Record):
    """Both halves of a Responses tool reference; both must match the HTTP output."""

    call_id: str = Field(description="The function_call `call_id`.")
    item_id: str = Field(description="The function_call item `id` (`fc_…`).")
    matched: bool = Field(
        description="Whether one output item in the parent call carries both values."
    )


class RelationRecord(Record):
    """`roller.relation/v1`: one evidence-backed link between participants and calls."""

    schema_: Literal["roller.relation/v1"] = Field(alias="schema", description="Record schema.")
    relation_id: str = Field(description="Opaque id, unique across captures.")
    type: RelationType = Field(description="What the relation asserts (docs/protocol.md).")
    status: RelationStatus = Field(
        description="`established` when every required piece of evidence was found; "
        "`unknown` when the relation is asserted natively but could not be bound uniquely."
    )
    parent_participant_id: str | None = Field(description="The delegating participant.")
    child_participant_id: str | None = Field(description="The subtask participant, if any.")
    source_call_id: str | None = Field(
        description="The call whose output emitted the tool call (spawn, result_in_context)."
    )
    target_call_id: str | None = Field(
        description="The later call whose input holds the result / acknowledgement / "
        "notification (result_in_context, launch_ack_in_context, result_delivered)."
    )
    tool_call_id: str | None = Field(
        description="The native tool-call id (Responses: `call_id|item_id`)."
    )
    model_tool_ref: ModelToolRef | None = Field(
        description="For Responses tool calls: both halves, checked against the output."
    )
    evidence: list[Evidence] = Field(description="Sources of the relation.")
    note: str | None = Field(description="Why the relation is unknown, when it is.")

"""The Claude Code relations of one subagent, from its meta.json and the transcripts.

Checked against Claude Code 2.1.332 on 2026-11-29 (`claude_code.transcripts` gives the
files' location and shape). Per subagent:
- `spawn`: meta.json `toolUseId` + the spawning `Agent` tool_use line (in the transcript
  meta.json names as spawner, `parentAgentId` else the main thread, and only there) +
  the child transcript;
- background (`requestShape: background`): `launch_acknowledged` from the launch's
  tool_result line, then per task notification naming this agent a `result_delivered`
  bound to the notification's tool-use id and the response that answered it, with the
  notification text to be found in that request, and `child_completed` /
  `child_failed` from its `<status>`;
- foreground: `result_delivered` and the outcome from the spawn's tool_result line
  (`toolUseResult` in the main transcript, `is_error` in a subagent's, where no
  toolUseResult exists).
Each delegation is judged by its own tool id: a later delegation of the same agent (a
resumed child) never completes the original spawn. `Child` gathers what the relations
say about the subagent (parent, outcome, delivery, unknown) for the participants and
lifecycle that `claude_code.logs` builds. Problem codes decided here: `missing_field`
(no meta.json toolUseId, a notification without a tool-use-id), `unexpected_count`
(several results for one spawn), `disagreement` (meta.json against the transcripts:
spawner, tool, depth, result).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from roller.capture.models import RelationType
from roller.harnesses.base import NativeEvidence, NativeProblem, NativeRelation, ParticipantState
from roller.harnesses.claude_code import profile
from roller.harnesses.claude_code.transcripts import (
    ROOT_KEY,
    Line,
    Meta,
    Notification,
    Subagent,
    Transcript,
    message_id,
)

SPAWN_TOOLS = frozenset(profile.SPAWN_TOOLS)
Outcome = Literal["completed", "failed"]
OUTCOME_RELATION: Mapping[Outcome, RelationType] = {
    "completed": "child_completed",
    "failed": "child_failed",
}


@dataclass
class Child:
    """What the logs say about one subagent, gathered while its relations are read."""

    agent_id: str
    sub: Subagent
    parent_key: str | None = None
    source: str | None = None  # response id of the output that emitted the spawn
    outcome: Outcome | None = None
    delivered: bool = False  # the result reached a later response of its receiver
    unknown: bool = False  # evidence missing or contradictory

    @property
    def state(self) -> ParticipantState:
        if self.outcome is not None:
            return self.outcome
        meta = self.sub.meta
        if meta is None or self.unknown:
            return "unknown"
        return "unknown" if meta.finished else "running"  # stopped, but how is unknown


def _relation(
    kind: RelationType,
    parent: str,
    child: Child,
    tool_id: str,
    *evidence: NativeEvidence,
    source_response_id: str | None = None,
    target_response_id: str | None = None,
    delivered_text: str | None = None,
    note: str | None = None,
) -> NativeRelation:
    return NativeRelation(
        type=kind,
        parent_key=parent,
        child_key=child.agent_id,
        tool_call_id=tool_id,
        evidence=evidence,
        source_response_id=source_response_id,
        target_response_id=target_response_id,
        delivered_text=delivered_text,
        note=note,
    )


def child_relations(
    child: Child,
    transcripts: Mapping[str, Transcript],
    notifications: Iterable[Notification],
    problems: list[NativeProblem],
) -> list[NativeRelation]:
    meta = child.sub.meta
    if meta is None or meta.tool_use_id is None:
        if meta is not None:
            message = "no toolUseId: the spawn cannot be bound"
            problems.append(NativeProblem("missing_field", message, meta.path))
        child.unknown = True
        return []
    spawner = _spawner(child, meta, transcripts, problems)
    if spawner is None:
        child.unknown = True
        return []
    tool_id = meta.tool_use_id
    meta_ev = NativeEvidence(meta.path, tool_id)
    spawn = _spawn(child, spawner, tool_id, meta_ev, problems)
    return [spawn, *_outcome(child, meta, spawner, tool_id, meta_ev, notifications, problems)]


def _spawn(
    child: Child,
    spawner: Transcript,
    tool_id: str,
    meta_ev: NativeEvidence,
    problems: list[NativeProblem],
) -> NativeRelation:
    """The spawn, bound by meta.json's toolUseId to the spawner's tool call (whose
    response becomes the child's source)."""
    (use_line, use_block), *_ = spawner.tool_uses(tool_id)
    if use_block.get("name") not in SPAWN_TOOLS:
        message = f"{tool_id} is a {use_block.get('name')} call"
        problems.append(NativeProblem("disagreement", message, spawner.path))
    child.source = message_id(use_line)
    return _relation(
        "spawn",
        spawner.key,
        child,
        tool_id,
        meta_ev,
        NativeEvidence(spawner.path, str(use_line.get("uuid"))),
        NativeEvidence(child.sub.transcript.path, None),
        source_response_id=child.source,
    )


def _outcome(
    child: Child,
    meta: Meta,
    spawner: Transcript,
    tool_id: str,
    meta_ev: NativeEvidence,
    notifications: Iterable[Notification],
    problems: list[NativeProblem],
) -> list[NativeRelation]:
    """What came back of the spawn: a background child's acknowledgement and
    notification, a foreground child's tool result; nothing (the child unknown) when
    the recorded result contradicts the child."""
    results = spawner.tool_results(tool_id)
    if len(results) > 1:
        message = f"{len(results)} results for tool call {tool_id}"
        problems.append(NativeProblem("unexpected_count", message, spawner.path))
    result = results[0] if len(results) == 1 else None
    recorded = result[0].get("toolUseResult") if result is not None else None
    recorded = recorded if isinstance(recorded, dict) else None
    conflict = _result_conflict(child, meta, recorded)
    if conflict is not None:
        message = f"the result of {tool_id} {conflict} ({meta.path})"
        problems.append(NativeProblem("disagreement", message, spawner.path))
        child.unknown = True
        return []
    unrecorded = None if recorded else "no toolUseResult in a subagent transcript; bound by "
    rels: list[NativeRelation] = []
    if meta.shape == "background":
        if result is not None:
            rels.append(
                _relation(
                    "launch_acknowledged",
                    spawner.key,
                    child,
                    tool_id,
                    NativeEvidence(spawner.path, str(result[0].get("uuid"))),
                    source_response_id=child.source,
                    note=unrecorded and unrecorded + "meta.json toolUseId and requestShape",
                )
            )
        rels += _notified(child, tool_id, notifications, problems)
    elif result is not None:
        note = unrecorded and unrecorded + "meta.json toolUseId and the tool_result line"
        rels += _foreground(child, spawner, tool_id, result, recorded, meta_ev, note)
    return rels


def _result_conflict(child: Child, meta: Meta, recorded: Line | None) -> str | None:
    """How the spawn's recorded result (`toolUseResult`) contradicts meta.json, if it does."""
    if recorded is None:
        return None
    if recorded.get("agentId") not in (None, child.agent_id):
        return f"names agent {recorded.get('agentId')}"
    if (recorded.get("status") == "async_launched") != (meta.shape == "background"):
        return f"is {recorded.get('status')} for requestShape {meta.shape}"
    return None


def _foreground(
    child: Child,
    spawner: Transcript,
    tool_id: str,
    result: tuple[Line, dict[str, Any]],
    recorded: Line | None,
    meta_ev: NativeEvidence,
    note: str | None,
) -> list[NativeRelation]:
    """A foreground child's result and outcome, from the spawn's tool_result line."""
    line, block = result
    status = recorded.get("status") if recorded is not None else None
    failed = block.get("is_error") is True or status not in (None, "completed")
    child.outcome = "failed" if failed else "completed"
    ev = NativeEvidence(spawner.path, str(line.get("uuid")))
    delivered = _relation(
        "result_delivered", spawner.key, child, tool_id, ev, meta_ev,
        source_response_id=child.source, note=note,
    )  # fmt: skip
    outcome = _relation(OUTCOME_RELATION[child.outcome], spawner.key, child, tool_id, ev, meta_ev)
    # Delivered = the result reached the model: a later output answers its line.
    child.delivered = bool(spawner.answers(str(line.get("uuid"))))
    return [delivered, outcome]


def _spawner(
    child: Child,
    meta: Meta,
    transcripts: Mapping[str, Transcript],
    problems: list[NativeProblem],
) -> Transcript | None:
    """The transcript meta.json names as spawner, when the tool_use is there and only there."""
    named = meta.parent_agent_id or ROOT_KEY
    holders = [k for k, t in transcripts.items() if t.tool_uses(meta.tool_use_id or "")]
    if holders != [named]:
        message = (
            f"names {named} as the spawner of {child.agent_id}, but tool call "
            f"{meta.tool_use_id} is in {', '.join(holders) or 'no transcript'}"
        )
        problems.append(NativeProblem("disagreement", message, meta.path))
        return None
    if (meta.depth == 1) != (meta.parent_agent_id is None):
        message = f"spawnDepth {meta.depth} disagrees with parentAgentId"
        problems.append(NativeProblem("disagreement", message, meta.path))
    child.parent_key = named
    return transcripts[named]


def _notified(
    child: Child,
    tool_id: str,
    notifications: Iterable[Notification],
    problems: list[NativeProblem],
) -> list[NativeRelation]:
    """Relations for each notification about this child. Each delegation is judged by
    its own tool id: a notification for a later delegation of the same agent (a resumed
    child) never completes the original spawn, nor the other way round."""
    rels: list[NativeRelation] = []
    for n in notifications:
        if n.task_id != child.agent_id:
            continue
        ev = NativeEvidence(n.path, n.uuid)
        if n.tool_use_id is None:
            message = f"notification {n.uuid} names no tool-use-id"
            problems.append(NativeProblem("missing_field", message, n.path))
            child.unknown = True
            continue
        notes = []
        if len(n.answers) > 1:
            notes.append(f"answered by several responses: {', '.join(sorted(n.answers))}")
        elif not n.answers:
            notes.append("no later response of the receiver answers this notification")
        if n.receiver != child.parent_key:
            notes.append(f"delivered to {n.receiver}, not to the spawner {child.parent_key}")
        rels.append(
            _relation(
                "result_delivered",
                n.receiver,
                child,
                n.tool_use_id,
                ev,
                source_response_id=child.source if n.tool_use_id == tool_id else None,
                target_response_id=next(iter(n.answers)) if len(n.answers) == 1 else None,
                delivered_text=n.text,
                note="; ".join(notes) or None,
            )
        )
        outcome: Outcome = "completed" if n.status == "completed" else "failed"
        rels.append(
            _relation(
                OUTCOME_RELATION[outcome], child.parent_key or n.receiver, child, n.tool_use_id, ev
            )
        )
        if n.tool_use_id == tool_id:
            child.outcome = outcome
            child.delivered = child.delivered or len(n.answers) == 1
    return rels

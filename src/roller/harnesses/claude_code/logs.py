"""The Claude Code native facts: participants, identity, relations, lifecycle.

`read_native(native_dir) -> NativeCapture` is the adapter's pure reader;
`claude_code.transcripts` parses the files (its docstring gives the log location and
shape, checked against Claude Code 2.1.332 on 2026-11-29). What is decided here:
- participants: `main` (the root) and one per subagent transcript (key = agentId); the
  parent comes from meta.json (`parentAgentId`, else the main thread) and must agree
  with the transcript that holds the spawning `Agent` tool_use;
- identity: each assistant `message.id` belongs to the transcript it is in (the join
  value for calls is the provider response id; a message id in two transcripts maps
  to both, which makes the call ambiguous); coverage is per message id;
- relations per subagent: `spawn` (meta.json toolUseId + the tool_use line + the child
  transcript); background (`requestShape: background`): `launch_acknowledged` from the
  launch's tool_result line, then per task notification naming this agent a
  `result_delivered` bound to the notification's tool-use id and the response that
  answered it, with the notification text to be found in that request, and
  `child_completed` / `child_failed` from its `<status>`; foreground:
  `result_delivered` and the outcome from the spawn's tool_result line (`toolUseResult`
  in the main transcript, `is_error` in a subagent's, where no toolUseResult exists);
- lifecycle: `complete` only when every child stopped and its result reached a later
  response; `pending` otherwise (the keys not done); `unknown` when a child's evidence
  is missing or contradicts itself. A launch acknowledgement is never completion, and a
  later delegation of the same agent (its own tool id) is judged by its own notification.
Contradictions are `problems` (the capture becomes partial), never resolved by choosing.
Problem codes decided here (besides the parsing ones of `claude_code.transcripts`):
`duplicate_id` (a response id in several transcripts), `unknown_reference` (a
notification naming no known task), `missing_field` (no meta.json toolUseId, a
notification without a tool-use-id), `unexpected_count` (several results for one spawn),
`disagreement` (meta.json against the transcripts: spawner, tool, depth, result).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from roller.capture.models import RelationType
from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    NativeRelation,
    ParticipantState,
)
from roller.harnesses.claude_code import profile
from roller.harnesses.claude_code.transcripts import (
    ROOT_KEY,
    Meta,
    Notification,
    Session,
    Subagent,
    Transcript,
    load_session,
    message_id,
)

SPAWN_TOOLS = frozenset(profile.SPAWN_TOOLS)
Outcome = Literal["completed", "failed"]
OUTCOME_RELATION: Mapping[Outcome, RelationType] = {
    "completed": "child_completed",
    "failed": "child_failed",
}


@dataclass
class _Child:
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


def read_native(native_dir: Path) -> NativeCapture:
    """The native facts of the Claude Code session copied under `native_dir`."""
    problems: list[NativeProblem] = []
    session = load_session(native_dir, problems)
    if session is None:
        return NativeCapture(
            participants=(),
            identity=NativeIdentity(basis="response_id", keys={}),
            relations=(),
            coverage=NativeCoverage(basis="per_message_id"),
            lifecycle=NativeLifecycle(status="unknown"),
            subtasks="supported",
            problems=tuple(problems),
        )
    transcripts = session.transcripts()
    identity, coverage = _outputs(transcripts, problems)
    notifications = [n for t in transcripts.values() for n in t.notifications()]
    children = {aid: _Child(aid, sub) for aid, sub in session.subagents.items()}
    relations: list[NativeRelation] = []
    for child in children.values():
        relations += _child_relations(child, transcripts, notifications, problems)
    for n in notifications:
        if n.task_id not in children:
            message = f"notification {n.uuid} names unknown task {n.task_id}"
            problems.append(NativeProblem("unknown_reference", message, n.path))
    lifecycle = _lifecycle(children.values())
    return NativeCapture(
        participants=_participants(session, children, lifecycle),
        identity=identity,
        relations=tuple(relations),
        coverage=coverage,
        lifecycle=lifecycle,
        subtasks="supported",
        problems=tuple(problems),
        wire_aliases={
            session.session_id: ROOT_KEY,
            **{f"{session.session_id}:{aid}": aid for aid in children},
        },
    )


def _outputs(
    transcripts: Mapping[str, Transcript], problems: list[NativeProblem]
) -> tuple[NativeIdentity, NativeCoverage]:
    """message.id -> the participant(s) whose transcript records it; ids per participant."""
    owners: dict[str, list[str]] = {}
    ids: dict[str, frozenset[str]] = {}
    for key, t in transcripts.items():
        mine = frozenset(mid for line in t.outputs() if (mid := message_id(line)) is not None)
        ids[key] = mine
        for mid in mine:
            owners.setdefault(mid, []).append(key)
    for mid, keys in sorted(owners.items()):
        if len(keys) > 1:
            message = f"response id {mid} is in several transcripts: {', '.join(keys)}"
            problems.append(NativeProblem("duplicate_id", message))
    identity = NativeIdentity(
        basis="response_id", keys={mid: tuple(keys) for mid, keys in owners.items()}
    )
    coverage = NativeCoverage(
        basis="per_message_id",
        ids=ids,
        notes=(
            "each call's provider response id is matched to a native assistant message.id; "
            "one response with parallel tool calls is several lines of one message.id",
        ),
    )
    return identity, coverage


def _participants(
    session: Session, children: Mapping[str, _Child], lifecycle: NativeLifecycle
) -> tuple[NativeParticipant, ...]:
    root = NativeParticipant(
        key=ROOT_KEY,
        role="root",
        parent_key=None,
        depth=0,
        native_ids={"session_id": session.session_id},
        name=ROOT_KEY,
        state=_root_state(session.main, lifecycle),
        evidence=(NativeEvidence(session.main.path, None),),
    )
    out = [root]
    for aid, child in children.items():
        meta = child.sub.meta
        ids = {"session_id": session.session_id, "agent_id": aid}
        evidence = [NativeEvidence(child.sub.transcript.path, None)]
        if meta is not None:
            if meta.tool_use_id:
                ids["tool_use_id"] = meta.tool_use_id
            evidence.append(NativeEvidence(meta.path, meta.tool_use_id))
        out.append(
            NativeParticipant(
                key=aid,
                role="child",
                parent_key=child.parent_key,
                depth=_depth(child, children),
                native_ids=ids,
                name=meta.agent_type if meta is not None else None,
                state=child.state,
                evidence=tuple(evidence),
            )
        )
    return tuple(out)


def _depth(child: _Child, children: Mapping[str, _Child]) -> int:
    depth, cur, seen = 1, child, {child.agent_id}
    while cur.parent_key not in (None, ROOT_KEY):
        parent = children.get(cur.parent_key or "")
        if parent is None or parent.agent_id in seen:
            break
        seen.add(parent.agent_id)
        depth, cur = depth + 1, parent
    return depth


def _root_state(main: Transcript, lifecycle: NativeLifecycle) -> ParticipantState:
    """Done when its last output ended the turn and nothing it waits for is pending
    (in `-p` mode the main thread still answers a child's notification)."""
    outputs = main.outputs()
    if not outputs:
        return "unknown"
    message = outputs[-1].get("message")
    if not isinstance(message, dict) or message.get("stop_reason") != "end_turn":
        return "unknown"
    return "completed" if lifecycle.status == "complete" else "running"


def _relation(
    kind: RelationType,
    parent: str,
    child: _Child,
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


def _child_relations(
    child: _Child,
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
    (use_line, use_block), *_ = spawner.tool_uses(tool_id)
    if use_block.get("name") not in SPAWN_TOOLS:
        message = f"{tool_id} is a {use_block.get('name')} call"
        problems.append(NativeProblem("disagreement", message, spawner.path))
    child.source = message_id(use_line)
    rels = [
        _relation(
            "spawn",
            spawner.key,
            child,
            tool_id,
            meta_ev,
            NativeEvidence(spawner.path, str(use_line.get("uuid"))),
            NativeEvidence(child.sub.transcript.path, None),
            source_response_id=child.source,
        )
    ]
    results = spawner.tool_results(tool_id)
    if len(results) > 1:
        message = f"{len(results)} results for tool call {tool_id}"
        problems.append(NativeProblem("unexpected_count", message, spawner.path))
    result = results[0] if len(results) == 1 else None
    recorded = result[0].get("toolUseResult") if result is not None else None
    recorded = recorded if isinstance(recorded, dict) else None
    background = meta.shape == "background"
    conflict = None
    if recorded is not None and recorded.get("agentId") not in (None, child.agent_id):
        conflict = f"names agent {recorded.get('agentId')}"
    elif recorded is not None and (recorded.get("status") == "async_launched") != background:
        conflict = f"is {recorded.get('status')} for requestShape {meta.shape}"
    if conflict is not None:
        message = f"the result of {tool_id} {conflict} ({meta.path})"
        problems.append(NativeProblem("disagreement", message, spawner.path))
        child.unknown = True
        return rels
    unrecorded = None if recorded else "no toolUseResult in a subagent transcript; bound by "
    if background:
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
        line, block = result
        status = recorded.get("status") if recorded is not None else None
        failed = block.get("is_error") is True or status not in (None, "completed")
        child.outcome = "failed" if failed else "completed"
        ev = NativeEvidence(spawner.path, str(line.get("uuid")))
        rels.append(
            _relation(
                "result_delivered",
                spawner.key,
                child,
                tool_id,
                ev,
                meta_ev,
                source_response_id=child.source,
                note=unrecorded and unrecorded + "meta.json toolUseId and the tool_result line",
            )
        )
        rels.append(
            _relation(OUTCOME_RELATION[child.outcome], spawner.key, child, tool_id, ev, meta_ev)
        )
        # Delivered = the result reached the model: a later output answers its line.
        child.delivered = bool(spawner.answers(str(line.get("uuid"))))
    return rels


def _spawner(
    child: _Child,
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
    child: _Child,
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


def _lifecycle(children: Iterable[_Child]) -> NativeLifecycle:
    """Execution end and result delivery are checked separately; unknown is never done."""
    children = list(children)
    pending = tuple(c.agent_id for c in children if c.state == "running" or not c.delivered)
    if any(c.unknown for c in children):
        return NativeLifecycle(status="unknown", pending_keys=pending)
    if pending:
        return NativeLifecycle(status="pending", pending_keys=pending)
    return NativeLifecycle(status="complete")

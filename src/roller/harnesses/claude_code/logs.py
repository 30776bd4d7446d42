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
- relations per subagent (`claude_code.relations`): spawn, launch acknowledgement,
  result delivery and outcome, each bound by the spawn's tool-use id;
- lifecycle: `complete` only when every child stopped and its result reached a later
  response; `pending` otherwise (the keys not done); `unknown` when a child's evidence
  is missing or contradicts itself. A launch acknowledgement is never completion, and a
  later delegation of the same agent (its own tool id) is judged by its own notification.
Contradictions are `problems` (the capture becomes partial), never resolved by choosing.
Problem codes decided here (besides the parsing ones of `claude_code.transcripts` and
the relation ones of `claude_code.relations`): `duplicate_id` (a response id in several
transcripts), `unknown_reference` (a notification naming no known task).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

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
from roller.harnesses.claude_code.relations import Child, child_relations
from roller.harnesses.claude_code.transcripts import (
    ROOT_KEY,
    Session,
    Transcript,
    load_session,
    message_id,
)


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
    children = {aid: Child(aid, sub) for aid, sub in session.subagents.items()}
    relations: list[NativeRelation] = []
    for child in children.values():
        relations += child_relations(child, transcripts, notifications, problems)
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
    session: Session, children: Mapping[str, Child], lifecycle: NativeLifecycle
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


def _depth(child: Child, children: Mapping[str, Child]) -> int:
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


def _lifecycle(children: Iterable[Child]) -> NativeLifecycle:
    """Execution end and result delivery are checked separately; unknown is never done."""
    children = list(children)
    pending = tuple(c.agent_id for c in children if c.state == "running" or not c.delivered)
    if any(c.unknown for c in children):
        return NativeLifecycle(status="unknown", pending_keys=pending)
    if pending:
        return NativeLifecycle(status="pending", pending_keys=pending)
    return NativeLifecycle(status="complete")

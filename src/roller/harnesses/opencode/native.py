"""OpenCode's native facts: participants, identity, relations, coverage and lifecycle,
derived purely from its store (`opencode.store.Store`). `read_native(native_dir)` is the
adapter's reader: the consolidated `raw/native/opencode.db` (the tables and fields are
in `roller.harnesses.opencode.store`) turned into these facts.

Checked against OpenCode 1.18.33, with every field below seen in real runs:
- **Participants.** One per session row. A subagent is its own session whose `parent_id`
  is its caller; `opencode run` makes one root. Depth is the length of the `parent_id`
  chain. Nothing else creates a participant: a `task` call that the harness rejected
  (depth limit: the child's forced `task` becomes tool `invalid`, or a `task` part in
  state `error` without `metadata.sessionId`) names no session, so no grandchild exists.
- **Identity** (`wire_participant`): every request carries its own `x-session-id`, which
  roller.identity turns into the participant key; a call belongs to the session whose
  id it is. There is no "current session": concurrent children each name themselves.
- **Relations**, per `task` tool part (`callID` = the provider's tool-call id):
  `spawn` (parent = the part's session, child = `state.metadata.sessionId`, which must
  be a session whose `parent_id` is that parent); `result_delivered` and
  `child_completed` when the part completed with output `<task id="CHILD"
  state="completed">…`; `child_failed` when it ended in `error`. A delegation that
  resumes a child (`task_id`) is a new part with a new `callID`, judged by that part only.
- **Coverage** (`per_session_assistant_count`): per session, the assistant messages that
  completed a model response (`time.completed` set, a `step-finish` part, no `error`),
  plus, for a root session whose title is no longer OpenCode's default, the one title
  generation request (small model, no tools) that produced that title: OpenCode stores
  no message for it, the title itself is its native output.
- **Lifecycle**: `complete` only when every session and every `task` part has finished;
  unfinished ones are `pending`; a background task (`metadata.background`, which the
  bundled profile cannot start) or an unreadable store is `unknown`.
Problem codes: those of `opencode.store`, and here `unknown_reference` (messages or a
parent naming a session without a row, a task naming a child without one),
`missing_field` (a task part without `callID`, a running task naming no child yet),
`disagreement` (a task's child with another parent, a completed task whose output does
not report its child completed), `unsupported` (background tasks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

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
from roller.harnesses.opencode.store import (
    DB_NAME,
    Store,
    StoredMessage,
    StoredPart,
    StoredSession,
    read_store,
)

# OpenCode's own placeholder titles (`Session.isDefaultTitle` in 1.18.33).
_DEFAULT_TITLE = re.compile(
    r"^(New session - |Child session - )\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
)
_TASK_HEAD = re.compile(r'^<task id="([^"]*)" state="([^"]*)">')
_OPEN_FINISHES = frozenset({"tool-calls", "unknown"})
_FINAL_TOOL_STATES = frozenset({"completed", "error"})


def _ev(ref: str) -> NativeEvidence:
    return NativeEvidence(path=DB_NAME, ref=ref)


def is_default_title(title: str) -> bool:
    return bool(_DEFAULT_TITLE.match(title))


def _depth(session: StoredSession, by_id: Mapping[str, StoredSession]) -> int:
    depth, seen, cur = 0, {session.id}, session
    while cur.parent_id is not None:
        depth += 1
        parent = by_id.get(cur.parent_id)
        if parent is None or parent.id in seen:
            break
        seen.add(parent.id)
        cur = parent
    return depth


def _session_state(
    messages: Sequence[StoredMessage], open_tools: bool
) -> tuple[ParticipantState, StoredMessage | None]:
    """A session's state from its own assistant messages, and its final one.

    "Final" is the last assistant message in OpenCode's own id order (its ids ascend);
    it decides completed vs failed only once nothing is left running.
    """
    assistant = [m for m in messages if m.role == "assistant"]
    if not assistant:
        return "unknown", None
    final = assistant[-1]
    if open_tools or any(not m.completed for m in assistant):
        return "running", final
    if final.error is not None:
        return "failed", final
    if final.finish is not None and final.finish not in _OPEN_FINISHES:
        return "completed", final
    return "unknown", final


def _completed_outputs(messages: Iterable[StoredMessage], finished: set[str]) -> int:
    return sum(
        1
        for m in messages
        if m.role == "assistant" and m.completed and m.error is None and m.id in finished
    )


def read_native(native_dir: Path) -> NativeCapture:
    """OpenCode's native facts from `native_dir/opencode.db` (see the module docstring)."""
    return native_capture(read_store(native_dir / DB_NAME))


def native_capture(store: Store) -> NativeCapture:
    problems = list(store.problems)
    by_id = {s.id: s for s in store.sessions}
    messages: dict[str, list[StoredMessage]] = {s.id: [] for s in store.sessions}
    for m in store.messages:
        messages.setdefault(m.session_id, []).append(m)
    parts: dict[str, list[StoredPart]] = {s.id: [] for s in store.sessions}
    for p in store.parts:
        parts.setdefault(p.session_id, []).append(p)
    finished = {p.message_id for p in store.parts if p.type == "step-finish"}
    for sid in sorted(set(messages) - set(by_id)):
        message = f"messages name session {sid}, which has no session row"
        problems.append(NativeProblem("unknown_reference", message))

    relations, notes, background, open_children = _task_relations(store, by_id, problems)

    participants: list[NativeParticipant] = []
    states: dict[str, ParticipantState] = {}
    counts: dict[str, int] = {}
    for s in store.sessions:
        if s.parent_id is not None and s.parent_id not in by_id:
            message = f"session {s.id} names parent {s.parent_id}, which has no row"
            problems.append(NativeProblem("unknown_reference", message))
        participant = _participant(s, by_id, messages[s.id], parts[s.id])
        states[s.id] = participant.state
        participants.append(participant)
        counts[s.id] = _completed_outputs(messages[s.id], finished)
        if s.parent_id is None and not is_default_title(s.title):
            counts[s.id] += 1
            notes.append(
                f"session {s.id}: 1 title generation counted (its stored title is no longer "
                "OpenCode's default; the title request has no message of its own)"
            )

    # Roots first, then by depth (OpenCode's session ids descend with time, so id order
    # alone would list children before their parents).
    participants.sort(key=lambda p: (p.depth, p.key))
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(
            basis="wire_participant", keys={s.id: (s.id,) for s in store.sessions}
        ),
        relations=tuple(relations),
        coverage=NativeCoverage(
            basis="per_session_assistant_count", counts=counts, notes=tuple(notes)
        ),
        lifecycle=_lifecycle(store, states, open_children, background, problems),
        subtasks="supported",
        problems=tuple(problems),
    )


def _participant(
    s: StoredSession,
    by_id: Mapping[str, StoredSession],
    messages: Sequence[StoredMessage],
    parts: Sequence[StoredPart],
) -> NativeParticipant:
    """One session as a participant: its state from its messages and tool parts."""
    open_tools = any(p.type == "tool" and p.status not in _FINAL_TOOL_STATES for p in parts)
    state, final = _session_state(messages, open_tools)
    native_ids = {"session_id": s.id}
    if s.parent_id is not None:
        native_ids["parent_session_id"] = s.parent_id
    evidence = [_ev(f"session:{s.id}")]
    if final is not None:
        evidence.append(_ev(f"message:{final.id}"))
    return NativeParticipant(
        key=s.id,
        role="root" if s.parent_id is None else "child",
        parent_key=s.parent_id,
        depth=_depth(s, by_id),
        native_ids=native_ids,
        name=s.agent,
        state=state,
        evidence=tuple(evidence),
    )


def _task_relations(
    store: Store, by_id: Mapping[str, StoredSession], problems: list[NativeProblem]
) -> tuple[list[NativeRelation], list[str], list[str], set[str]]:
    """Relations from `task` parts; notes on rejected spawns; background and open children."""
    relations: list[NativeRelation] = []
    notes: list[str] = []
    background: list[str] = []
    open_children: set[str] = set()
    for p in store.parts:
        child = _task_child(p, by_id, notes, problems)
        if child is None:
            continue
        if p.metadata.get("background") is True:
            background.append(child)
        evidence = (_ev(f"part:{p.id}"), _ev(f"session:{child}"))
        relations.append(_relation("spawn", p, child, evidence))
        outcome = _task_outcome(p, child, evidence, problems)
        if outcome is None:
            open_children.add(child)
        relations += outcome or ()
    return relations, notes, background, open_children


def _task_child(
    p: StoredPart,
    by_id: Mapping[str, StoredSession],
    notes: list[str],
    problems: list[NativeProblem],
) -> str | None:
    """The child session a `task` part spawned (checked against its row); None for
    another part, or a task that created no session (noted) or names none yet."""
    if p.type != "tool":
        return None
    if p.tool == "invalid" and p.input.get("tool") == "task":
        notes.append(
            f"session {p.session_id}: task call {p.call_id} was refused by OpenCode "
            "(tool `invalid`: this session is not offered task); no session was created"
        )
        return None
    if p.tool != "task":
        return None
    child = p.metadata.get("sessionId")
    if not isinstance(child, str):
        if p.status in _FINAL_TOOL_STATES:
            notes.append(
                f"session {p.session_id}: task call {p.call_id} ended {p.status} without "
                f"creating a session ({p.error or 'no error given'})"
            )
        else:
            message = (
                f"task call {p.call_id} in session {p.session_id} is {p.status} and "
                "names no child session yet"
            )
            problems.append(NativeProblem("missing_field", message))
        return None
    if p.call_id is None:
        problems.append(NativeProblem("missing_field", f"task part {p.id} has no callID"))
    session = by_id.get(child)
    if session is None:
        message = f"task call {p.call_id} names child {child}, which has no row"
        problems.append(NativeProblem("unknown_reference", message))
    elif session.parent_id != p.session_id:
        message = (
            f"task call {p.call_id} in session {p.session_id} names child {child}, "
            f"whose parent is {session.parent_id}"
        )
        problems.append(NativeProblem("disagreement", message))
    return child


def _task_outcome(
    p: StoredPart,
    child: str,
    evidence: tuple[NativeEvidence, ...],
    problems: list[NativeProblem],
) -> list[NativeRelation] | None:
    """How a spawned child's task ended, as relations; None while the child is open (its
    task still running, or completed with an output that does not report the child so)."""
    if p.status == "completed":
        head = _TASK_HEAD.match(p.output or "")
        if head is None or head[1] != child or head[2] != "completed":
            message = (
                f"task call {p.call_id} completed but its output does not report child "
                f"{child} as completed"
            )
            problems.append(NativeProblem("disagreement", message))
            return None
        return [
            _relation("result_delivered", p, child, (_ev(f"part:{p.id}"),)),
            _relation("child_completed", p, child, evidence),
        ]
    if p.status == "error":
        return [_relation("child_failed", p, child, evidence, note=p.error)]
    return None


def _relation(
    kind: RelationType,
    part: StoredPart,
    child: str,
    evidence: tuple[NativeEvidence, ...],
    note: str | None = None,
) -> NativeRelation:
    return NativeRelation(
        type=kind,
        parent_key=part.session_id,
        child_key=child,
        tool_call_id=part.call_id,
        evidence=evidence,
        note=note,
    )


def _lifecycle(
    store: Store,
    states: Mapping[str, ParticipantState],
    open_children: set[str],
    background: Sequence[str],
    problems: list[NativeProblem],
) -> NativeLifecycle:
    if background:
        message = (
            "background task(s) "
            + ", ".join(sorted(set(background)))
            + ": roller has no drain for OpenCode background subagents"
        )
        problems.append(NativeProblem("unsupported", message))
    roots = [s for s in store.sessions if s.parent_id is None]
    if store.problems or not roots or background:
        return NativeLifecycle(status="unknown")
    pending = sorted({key for key, state in states.items() if state == "running"} | open_children)
    if pending:
        return NativeLifecycle(status="pending", pending_keys=tuple(pending))
    if any(state == "unknown" for state in states.values()):
        return NativeLifecycle(status="unknown")
    return NativeLifecycle(status="complete")

"""Hermes's native facts: participants, identity, relations, coverage and lifecycle,
derived purely from its store (`hermes.store.Store`). `read_native(native_dir)` is the
adapter's reader (the tables, fields and files are in `roller.harnesses.hermes.store`).

Checked against Hermes Agent 0.19.0 under `hermes -z`, with every fact below seen in
real runs (Chat Completions, Responses and Anthropic Messages modes):
- **Participants.** One per `sessions` row (`native_ids`: `session_id`, and on a child
  `parent_session_id` and `delegate_tool_call_id`, the delegating call). The root is the
  row without `parent_session_id` (`source` `cli`); a `delegate_task` child names its
  parent there
  and in `model_config._delegate_from` (both must agree, else `disagreement`). Depth is
  the length of the parent chain (a child with role `orchestrator` can delegate again
  when `delegation.max_spawn_depth` allows).
- **Identity** (`wire_participant`): every model request carries
  `x-roller-hermes-session-id`, the executing agent's own session id (roller's plugin);
  a call belongs to the session whose id it is. Side requests Hermes makes outside its
  agent loop (the local-server probes `GET /api/v1/models`) carry none and stay
  unattributed side calls.
- **Relations**, from roller's delegation record (the plugin's `subagent_start` line per
  child: its parent and the `delegate_task` tool-call id that built it, `ordinal` = its
  index in a batched `tasks: [...]` call): `spawn`; then, from the parent's
  `delegate_task` result row (`tool_call_id` = that call), the entry whose `task_index` is
  the ordinal: `result_delivered` plus `child_completed` (status `completed`) or
  `child_failed`. One batched call is one tool-call id with several children. In
  Responses mode (roller's config says `codex_responses`) the tool reference is
  `call_id|item_id` with `model_tool_ref` (both stored in the parent's `tool_calls`).
  A child with no record line, or a line that names no tool call, gets a spawn relation
  without a tool call (finalize leaves it `unknown`), never one guessed from text or
  order.
- **Coverage** (`per_session_count_and_tool_call_ids`): per session `api_call_count`
  (calls that returned; Hermes retries failed ones), and every tool-call id of its
  assistant rows must be in one of its captured outputs (not the reverse: Hermes drops a
  duplicate tool call, same name and arguments, from a reply before it runs it).
- **Lifecycle**: `-z` runs `delegate_task` synchronously (a one-shot run declares a
  stateless channel), so at exit every session has ended: `complete` when each has an
  `end_reason` and every child has its delegation result; sessions still open are
  `pending`; an unreadable store is `unknown`.
Problem codes: those of `hermes.store`, and here `not_an_object` (a delegate result that
is not JSON with a `results` list), `unknown_reference` (a parent or a
record naming a session without a row), `disagreement` (`_delegate_from` against
`parent_session_id`, a record whose parent differs from the child's row, `source`
against the parent link), `unexpected_count` (not exactly one root), `missing_record`
(a child without a delegation line, a delegate result without the child's entry).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

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
from roller.harnesses.hermes.store import (
    DB_NAME,
    DELEGATIONS,
    Delegation,
    StoredMessage,
    StoredSession,
    read_store,
)
from roller.harnesses.lineage import chain_depth

DELEGATE_TOOL: Final = "delegate_task"
# The api_mode whose stored `response_item_id`s are the wire's Responses item ids.
RESPONSES: Final = "codex_responses"
COVERAGE: Final = "per_session_count_and_tool_call_ids"


def read_native(native_dir: Path) -> NativeCapture:
    """Hermes's native facts from `native_dir` (see the module docstring)."""
    store = read_store(native_dir)
    problems = list(store.problems)
    by_id = {s.id: s for s in store.sessions}
    results = _delegate_results(store.messages, problems)
    items = _emitted_refs(store.messages) if store.api_mode == RESPONSES else {}
    relations, delivered = _relations(store.delegations, by_id, items, results, problems)
    _check_sessions(store.sessions, by_id, store.delegations, problems)
    calls = {d.child_id: d.tool_call_id for d in store.delegations if d.tool_call_id}
    participants = [_participant(s, by_id, delivered, calls) for s in store.sessions]
    participants.sort(key=lambda p: (p.depth, p.key))
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(
            basis="wire_participant", keys={s.id: (s.id,) for s in store.sessions}
        ),
        relations=tuple(relations),
        coverage=_coverage(store.sessions, store.messages),
        lifecycle=_lifecycle(store.sessions, delivered, bool(store.problems)),
        subtasks="supported",
        problems=tuple(problems),
    )


def _ev(ref: str) -> NativeEvidence:
    return NativeEvidence(path=DB_NAME, ref=ref)


def _participant(
    s: StoredSession,
    by_id: Mapping[str, StoredSession],
    delivered: Mapping[str, str],
    calls: Mapping[str | None, str],
) -> NativeParticipant:
    state: ParticipantState = "completed" if s.end_reason is not None else "running"
    if delivered.get(s.id) not in (None, "completed"):
        state = "failed"
    ids = {"session_id": s.id}
    if s.parent_id is not None:
        ids["parent_session_id"] = s.parent_id
    if s.id in calls:
        ids["delegate_tool_call_id"] = calls[s.id]
    return NativeParticipant(
        key=s.id,
        role="root" if s.parent_id is None else "child",
        parent_key=s.parent_id,
        depth=chain_depth(s.id, {k: v.parent_id for k, v in by_id.items()}),
        native_ids=ids,
        name=s.source or None,
        state=state,
        evidence=(_ev(f"session:{s.id}"),),
    )


def _check_sessions(
    sessions: Sequence[StoredSession],
    by_id: Mapping[str, StoredSession],
    delegations: Sequence[Delegation],
    problems: list[NativeProblem],
) -> None:
    roots = [s for s in sessions if s.parent_id is None]
    if sessions and len(roots) != 1:
        problems.append(
            NativeProblem("unexpected_count", f"{len(roots)} sessions without a parent", DB_NAME)
        )
    recorded = {d.child_id for d in delegations}
    for s in sessions:
        where = f"session {s.id}"
        if s.parent_id is None:
            continue
        if s.parent_id not in by_id:
            message = f"names parent {s.parent_id}, which has no row"
            problems.append(NativeProblem("unknown_reference", message, where))
        if s.delegate_from is not None and s.delegate_from != s.parent_id:
            message = f"model_config._delegate_from {s.delegate_from} is not its parent"
            problems.append(NativeProblem("disagreement", message, where))
        if s.source != "subagent":
            message = f"has a parent but source {s.source!r}, not 'subagent'"
            problems.append(NativeProblem("disagreement", message, where))
        if s.id not in recorded:
            message = f"child {s.id} has no line in roller's delegation record"
            problems.append(NativeProblem("missing_record", message, DELEGATIONS))


@dataclass(frozen=True)
class _Result:
    message_id: int
    entries: Mapping[int, str]  # task_index -> status


def _delegate_results(
    messages: Sequence[StoredMessage], problems: list[NativeProblem]
) -> dict[tuple[str, str], _Result]:
    """(session, tool-call id) -> the `delegate_task` result row's per-task statuses."""
    out: dict[tuple[str, str], _Result] = {}
    for m in messages:
        if m.role != "tool" or m.tool_name != DELEGATE_TOOL or m.tool_call_id is None:
            continue
        try:
            value = json.loads(m.content or "")
        except json.JSONDecodeError:
            value = None
        results = value.get("results") if isinstance(value, dict) else None
        if not isinstance(results, list):
            message = "the delegate_task result is not JSON with a results list"
            problems.append(NativeProblem("not_an_object", message, f"message {m.id}"))
            continue
        entries = {
            r["task_index"]: str(r.get("status"))
            for r in results
            if isinstance(r, dict) and type(r.get("task_index")) is int
        }
        out[(m.session_id, m.tool_call_id)] = _Result(m.id, entries)
    return out


def _emitted_refs(messages: Sequence[StoredMessage]) -> dict[tuple[str, str], str | None]:
    """(session, tool-call id) -> the Responses item id its assistant row stored."""
    return {
        (m.session_id, t.id): t.item_id
        for m in messages
        if m.role == "assistant"
        for t in m.tool_calls
    }


def _relations(
    delegations: Sequence[Delegation],
    by_id: Mapping[str, StoredSession],
    items: Mapping[tuple[str, str], str | None],
    results: Mapping[tuple[str, str], _Result],
    problems: list[NativeProblem],
) -> tuple[list[NativeRelation], dict[str, str]]:
    """Relations per recorded child; and per child, the status its result delivered.
    `items`: the Responses item id of each (session, tool call), in Responses mode only."""
    out: list[NativeRelation] = []
    delivered: dict[str, str] = {}
    for d in delegations:
        where = f"{DELEGATIONS}:{d.line}"
        child = by_id.get(d.child_id or "")
        if child is None or d.parent_id is None:
            message = f"names child {d.child_id}, which has no session row"
            problems.append(NativeProblem("unknown_reference", message, where))
            continue
        if child.parent_id != d.parent_id:
            message = f"names parent {d.parent_id}; the child's row says {child.parent_id}"
            problems.append(NativeProblem("disagreement", message, where))
            continue
        record = NativeEvidence(path=DELEGATIONS, ref=f"line {d.line}")
        evidence = (record, _ev(f"session:{child.id}"))
        if d.tool_call_id is None:
            out.append(_relation("spawn", d, None, None, evidence))
            continue
        item = items.get((d.parent_id, d.tool_call_id))
        ref = (d.tool_call_id, item) if item is not None else None
        tool_id = f"{d.tool_call_id}|{item}" if item is not None else d.tool_call_id
        out.append(_relation("spawn", d, tool_id, ref, evidence))
        result = results.get((d.parent_id, d.tool_call_id))
        status = result.entries.get(d.ordinal) if result and d.ordinal is not None else None
        if result is None or status is None:
            message = f"no delegate_task result reports child {child.id}"
            problems.append(NativeProblem("missing_record", message, where))
            continue
        delivered[child.id] = status
        shown = (record, _ev(f"message:{result.message_id}"))
        out.append(_relation("result_delivered", d, tool_id, ref, shown))
        kind: RelationType = "child_completed" if status == "completed" else "child_failed"
        note = None if status == "completed" else f"delegate_task reports status {status}"
        out.append(_relation(kind, d, tool_id, ref, shown, note))
    return out, delivered


def _relation(
    kind: RelationType,
    d: Delegation,
    tool_id: str | None,
    ref: tuple[str, str] | None,
    evidence: tuple[NativeEvidence, ...],
    note: str | None = None,
) -> NativeRelation:
    return NativeRelation(
        type=kind,
        parent_key=d.parent_id,
        child_key=d.child_id,
        tool_call_id=tool_id,
        evidence=evidence,
        model_tool_ref=ref,
        note=note,
    )


def _coverage(
    sessions: Sequence[StoredSession], messages: Sequence[StoredMessage]
) -> NativeCoverage:
    tool_ids: dict[str, set[str]] = {}
    assistant: dict[str, int] = {}
    for m in messages:
        if m.role == "assistant":
            assistant[m.session_id] = assistant.get(m.session_id, 0) + 1
            tool_ids.setdefault(m.session_id, set()).update(t.id for t in m.tool_calls)
    notes = [
        f"session {s.id}: api_call_count {s.api_calls}, {assistant.get(s.id, 0)} assistant "
        "messages (the count checked is api_call_count)"
        for s in sessions
        if assistant.get(s.id, 0) != s.api_calls
    ]
    return NativeCoverage(
        basis=COVERAGE,
        counts={s.id: s.api_calls for s in sessions},
        tool_call_ids={k: frozenset(v) for k, v in tool_ids.items() if v},
        notes=tuple(notes),
    )


def _lifecycle(
    sessions: Sequence[StoredSession], delivered: Mapping[str, str], unreadable: bool
) -> NativeLifecycle:
    if unreadable or not sessions:
        return NativeLifecycle(status="unknown")
    pending = sorted(
        s.id
        for s in sessions
        if s.end_reason is None or (s.parent_id is not None and s.id not in delivered)
    )
    if pending:
        return NativeLifecycle(status="pending", pending_keys=tuple(pending))
    return NativeLifecycle(status="complete")

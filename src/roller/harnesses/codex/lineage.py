"""Codex threads -> participants: who is the root, who spawned whom, how deep, and
whether each thread's last turn ended (codex-cli 0.171.0).

A child's parent is named by `session_meta.parent_thread_id`, by
`session_meta.source.subagent.thread_spawn.parent_thread_id`, by the `threads.source`
column and by the `thread_spawn_edges` row of `state_5.sqlite`; every one present must
agree, else the lineage is lost (None) and a problem says why — never a side picked.
The root is the thread with no parent whose `thread_source` is `user`.
Problem codes: `missing_file` (an indexed thread without its rollout), `missing_record`
(a rollout without its `threads` row, a child without its `thread_spawn_edges` row),
`disagreement` (parents, rollout names or depths that disagree), `unknown_reference` (a
thread naming itself as its parent), `unexpected_count` (several roots), `missing_field`
(a subagent thread whose parent is not known).
"""

from __future__ import annotations

from pathlib import Path

from roller.harnesses.base import (
    NativeEvidence,
    NativeParticipant,
    NativeProblem,
    ParticipantState,
)
from roller.harnesses.codex.rollout import Rollout
from roller.harnesses.codex.state import STATE_DB, StateIndex

_NATIVE_ID_KEYS = (
    "session_id",
    "agent_nickname",
    "agent_path",
    "forked_from_id",
    "multi_agent_version",
)


def check_index(
    rollouts: dict[str, Rollout], state: StateIndex | None, problems: list[NativeProblem]
) -> None:
    """Every indexed thread has its rollout and every rollout its index row."""
    if state is None:
        return
    for tid, row in sorted(state.threads.items()):
        rollout = rollouts.get(tid)
        if rollout is None:
            message = f"thread {tid} has no rollout file"
            problems.append(NativeProblem("missing_file", message, STATE_DB))
        elif Path(rollout.path).name != row.rollout_name:
            message = f"thread {tid} names rollout {row.rollout_name}"
            problems.append(NativeProblem("disagreement", message, STATE_DB))
    for tid in sorted(set(rollouts) - set(state.threads)):
        problems.append(NativeProblem("missing_record", f"no threads row for {tid}", STATE_DB))


def parents_of(
    rollouts: dict[str, Rollout], state: StateIndex | None, problems: list[NativeProblem]
) -> dict[str, str | None]:
    """Each thread's parent; when its sources disagree the lineage is lost (None)."""
    out: dict[str, str | None] = {}
    for tid, r in sorted(rollouts.items()):
        named = {
            "session_meta.parent_thread_id": r.parent_thread_id,
            "session_meta.source.thread_spawn": r.thread_spawn.get("parent_thread_id") or None,
        }
        if state is not None:
            edge = state.edges.get(tid)
            named["thread_spawn_edges"] = edge.parent_thread_id if edge else None
            row = state.threads.get(tid)
            named["threads.source"] = row.parent_thread_id if row else None
        values = {v for v in named.values() if v is not None}
        if len(values) > 1:
            message = (
                "parents disagree (" + ", ".join(f"{k}={v}" for k, v in named.items() if v) + ")"
            )
            problems.append(NativeProblem("disagreement", message, f"thread {tid}"))
            out[tid] = None
            continue
        parent = next(iter(values), None)
        if parent is not None and state is not None and tid not in state.edges:
            message = f"no thread_spawn_edges row for its parent {parent}"
            problems.append(NativeProblem("missing_record", message, f"thread {tid}"))
        if parent == tid:
            message = "names itself as its parent"
            problems.append(NativeProblem("unknown_reference", message, f"thread {tid}"))
            parent = None
        out[tid] = parent
    return out


def is_root(r: Rollout, parent: str | None) -> bool:
    return parent is None and r.meta.get("thread_source") == "user" and not r.thread_spawn


def participants(
    rollouts: dict[str, Rollout],
    parents: dict[str, str | None],
    state: StateIndex | None,
    problems: list[NativeProblem],
) -> list[NativeParticipant]:
    roots = [t for t, r in rollouts.items() if is_root(r, parents[t])]
    if len(roots) > 1:
        message = f"several root threads: {', '.join(sorted(roots))}"
        problems.append(NativeProblem("unexpected_count", message))
    out: list[NativeParticipant] = []
    for tid in sorted(rollouts, key=lambda t: (not is_root(rollouts[t], parents[t]), t)):
        r = rollouts[tid]
        parent = parents[tid]
        root = is_root(r, parent)
        if not root and parent is None:
            message = "a subagent thread whose parent is not known"
            problems.append(NativeProblem("missing_field", message, f"thread {tid}"))
        depth = depth_of(tid, parents)
        declared = r.thread_spawn.get("depth")
        if not root and isinstance(declared, int) and parent is not None and declared != depth:
            message = f"session_meta depth {declared}, parent chain {depth}"
            problems.append(NativeProblem("disagreement", message, f"thread {tid}"))
        state_name, line = r.state
        ids = {"thread_id": tid, "rollout": r.path}
        for key in _NATIVE_ID_KEYS:
            value = r.meta.get(key)
            if isinstance(value, str) and value:
                ids[key] = value
        edge = state.edges.get(tid) if state is not None else None
        if edge is not None:
            ids["spawn_edge_status"] = edge.status
        evidence = [NativeEvidence(r.path, f"#0 session_meta {tid}")]
        if line is not None:
            evidence.append(NativeEvidence(r.path, f"#{line.ordinal} {line.item_type}"))
        out.append(
            NativeParticipant(
                key=tid,
                role="root" if root else "child",
                parent_key=parent,
                depth=0 if root else max(depth, 1),
                native_ids=ids,
                name=ids.get("agent_path") or ids.get("agent_nickname"),
                state=_state(state_name),
                evidence=tuple(evidence),
            )
        )
    return out


def _state(name: str) -> ParticipantState:
    if name == "completed":
        return "completed"
    if name == "failed":
        return "failed"
    if name == "running":
        return "running"
    return "unknown"


def depth_of(tid: str, parents: dict[str, str | None]) -> int:
    depth, seen, cur = 0, {tid}, parents.get(tid)
    while cur is not None and cur not in seen:
        depth += 1
        seen.add(cur)
        cur = parents.get(cur)
    return depth

"""The Codex native reader: copied rollouts and thread index -> `NativeCapture`.

Checked against codex-cli 0.171.0, both multi-agent tool generations (`multi_agent_v1`,
the default, and `collaboration` with `features.multi_agent_v2`); real files under
`tests/data/harnesses/codex/`. Pure: it reads `raw/native/` and returns values.

Inputs (copied by `CodexAdapter.collect_native`):
- `sessions/**/rollout-*.jsonl`, one per thread (shape: `roller.harnesses.codex.rollout`);
- `state_5.sqlite`, the thread index (shape: `roller.harnesses.codex.state`).

What it asserts, and from which evidence:
- Participants: every thread with a rollout. Root: `thread_source: user` and no parent.
  A child's parent is named three times — `session_meta.parent_thread_id`,
  `session_meta.source.subagent.thread_spawn.parent_thread_id` and the
  `thread_spawn_edges` row — and all that are present must agree.
- Identity (`wire_participant`): a call's `thread-id` header (roller.identity's
  participant key for Codex: the bare thread id) must be a thread with a rollout.
- Coverage (`token_usage_count`): the number of `token_usage_record`s per thread, each
  one model response; their `response_id`s are listed too, so the captured calls of a
  thread must carry exactly those ids. `event_msg/token_count` carries no ids; its count
  is only compared with the records and a difference noted.
- `spawn` + `launch_acknowledged` per `spawn_agent` call whose output names the child
  (v1 `{"agent_id"}`; v2 `{"task_name"}`, the child's agent path), cross-checked with
  the `item_completed` collab item of the same `call_id` and the child's own parent.
  `model_tool_ref` is `(call_id, item id)`: finalize needs both in one output item.
- `result_delivered`: v1 `wait_agent` output naming the child with a final status, and
  v1 `<subagent_notification>` / v2 `FINAL_ANSWER` `agent_message` input items; each is
  bound to the first later response of the parent whose sampling record
  (`sampled_through_sequence`) covers the item, and its text must be in that call. An
  item no later response sampled (recorded after the parent's last response, e.g. a
  second child finishing after `codex exec`'s turn ended) reached no model: no relation.
- `child_completed` / `child_failed`: the child's last own turn ended in
  `task_complete` / `turn_aborted`.
- A warm-forked (v2) child's copied parent history is the parent's: it yields nothing
  for the child and nothing twice for the parent.
- Tools loaded dynamically (`tool_search_call` / `tool_search_output`) in the root
  thread bar the main trajectory (never per-call export).

Disagreeing evidence is a problem (the capture becomes partial); nothing is resolved by
picking a side, and nothing is inferred from time, text or order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.capture.models import RelationType
from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeRelation,
    ParticipantState,
)
from roller.harnesses.codex.rollout import Delivered, Rollout, ToolCall, parse_rollout
from roller.harnesses.codex.state import STATE_DB, StateIndex, read_state_db

SESSIONS = "sessions"
MULTI_AGENT_NAMESPACES = frozenset({"multi_agent_v1", "collaboration"})
# Final states of a v1 wait/notification status object (`{"completed": text}` …).
FINAL_STATUSES = frozenset({"completed", "errored"})
COVERAGE_NOTE = (
    "Codex: outputs counted per thread from token_usage_record (one per model response); "
    "weaker than a per-id check, so each record's response_id is also required among the "
    "thread's captured calls; event_msg/token_count carries no ids and is only compared."
)
DYNAMIC_TOOLS_BLOCK = "dynamic_tools_loaded"


@dataclass(frozen=True)
class _Spawn:
    parent: Rollout
    call: ToolCall
    child: str
    evidence: tuple[NativeEvidence, ...]

    @property
    def ref(self) -> tuple[str, str] | None:
        if self.call.item_id is None:
            return None
        return (self.call.call_id, self.call.item_id)

    @property
    def tool_call_id(self) -> str:
        ref = self.ref
        return f"{ref[0]}|{ref[1]}" if ref else self.call.call_id


def read_codex_native(native_dir: Path) -> NativeCapture:
    """Everything the copied native logs of one attempt say (see the module docstring)."""
    problems: list[str] = []
    rollouts = _read_rollouts(native_dir, problems)
    state = read_state_db(native_dir / STATE_DB, problems)
    _check_index(rollouts, state, problems)
    parents = _parents(rollouts, state, problems)
    participants = _participants(rollouts, parents, state, problems)
    spawns = _spawns(rollouts, parents, problems)
    notes: list[str] = []
    relations = _relations(rollouts, spawns, state, notes)
    running = tuple(p.key for p in participants if p.state == "running")
    unknown = any(p.state == "unknown" for p in participants)
    if not rollouts:
        problems.append(f"no rollout under {SESSIONS}/: no thread to attribute calls to")
    lifecycle = NativeLifecycle(
        status="pending" if running else ("unknown" if unknown or not rollouts else "complete"),
        pending_keys=running,
    )
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(
            basis="wire_participant", keys={tid: (tid,) for tid in sorted(rollouts)}
        ),
        relations=tuple(relations),
        coverage=_coverage(rollouts, notes),
        lifecycle=lifecycle,
        subtasks="supported",
        problems=tuple(problems),
        main_trajectory_blocked_by=_trajectory_blocks(rollouts, parents),
    )


def _read_rollouts(native_dir: Path, problems: list[str]) -> dict[str, Rollout]:
    out: dict[str, Rollout] = {}
    root = native_dir / SESSIONS
    files = sorted(root.rglob("*.jsonl")) if root.is_dir() else []
    for path in files:
        rel = path.relative_to(native_dir).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{rel}: unreadable ({exc})")
            continue
        rollout = parse_rollout(text, rel, problems)
        if rollout is None:
            continue
        if rollout.thread_id in out:
            problems.append(
                f"{rel}: thread {rollout.thread_id} also has {out[rollout.thread_id].path}"
            )
            continue
        out[rollout.thread_id] = rollout
    return out


def _check_index(
    rollouts: dict[str, Rollout], state: StateIndex | None, problems: list[str]
) -> None:
    if state is None:
        return
    for tid, row in sorted(state.threads.items()):
        rollout = rollouts.get(tid)
        if rollout is None:
            problems.append(f"{STATE_DB}: thread {tid} has no rollout file")
        elif Path(rollout.path).name != row.rollout_name:
            problems.append(f"{STATE_DB}: thread {tid} names rollout {row.rollout_name}")
    for tid in sorted(set(rollouts) - set(state.threads)):
        problems.append(f"{STATE_DB}: no threads row for {tid}")


def _parents(
    rollouts: dict[str, Rollout], state: StateIndex | None, problems: list[str]
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
            problems.append(
                f"thread {tid}: parents disagree ("
                + ", ".join(f"{k}={v}" for k, v in named.items() if v)
                + ")"
            )
            out[tid] = None
            continue
        parent = next(iter(values), None)
        if parent is not None and state is not None and tid not in state.edges:
            problems.append(f"thread {tid}: no thread_spawn_edges row for its parent {parent}")
        if parent == tid:
            problems.append(f"thread {tid}: names itself as its parent")
            parent = None
        out[tid] = parent
    return out


def _is_root(r: Rollout, parent: str | None) -> bool:
    return parent is None and r.meta.get("thread_source") == "user" and not r.thread_spawn


def _participants(
    rollouts: dict[str, Rollout],
    parents: dict[str, str | None],
    state: StateIndex | None,
    problems: list[str],
) -> list[NativeParticipant]:
    roots = [t for t, r in rollouts.items() if _is_root(r, parents[t])]
    if len(roots) > 1:
        problems.append(f"several root threads: {', '.join(sorted(roots))}")
    out: list[NativeParticipant] = []
    for tid in sorted(rollouts, key=lambda t: (not _is_root(rollouts[t], parents[t]), t)):
        r = rollouts[tid]
        parent = parents[tid]
        root = _is_root(r, parent)
        if not root and parent is None:
            problems.append(f"thread {tid}: a subagent thread whose parent is not known")
        depth = _depth(tid, parents)
        declared = r.thread_spawn.get("depth")
        if not root and isinstance(declared, int) and parent is not None and declared != depth:
            problems.append(f"thread {tid}: session_meta depth {declared}, parent chain {depth}")
        state_name, line = r.state
        ids = {"thread_id": tid, "rollout": r.path}
        for key in (
            "session_id",
            "agent_nickname",
            "agent_path",
            "forked_from_id",
            "multi_agent_version",
        ):
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


def _depth(tid: str, parents: dict[str, str | None]) -> int:
    depth, seen, cur = 0, {tid}, parents.get(tid)
    while cur is not None and cur not in seen:
        depth += 1
        seen.add(cur)
        cur = parents.get(cur)
    return depth


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _is_multi_agent(call: ToolCall, name: str) -> bool:
    return call.name == name and call.namespace in MULTI_AGENT_NAMESPACES


def _spawns(
    rollouts: dict[str, Rollout], parents: dict[str, str | None], problems: list[str]
) -> list[_Spawn]:
    by_path: dict[tuple[str, str], list[str]] = {}
    for tid, r in rollouts.items():
        parent, path = parents[tid], r.agent_path
        if parent is not None and path is not None:
            by_path.setdefault((parent, path), []).append(tid)
    out: list[_Spawn] = []
    for r in (rollouts[t] for t in sorted(rollouts)):
        for call in r.tool_calls:
            if not _is_multi_agent(call, "spawn_agent"):
                continue
            where = f"{r.path}: #{call.ordinal} spawn_agent {call.call_id}"
            output = r.outputs.get(call.call_id)
            acked = _json_object(output.output) if output else None
            named: set[str] = set()
            if acked is not None and isinstance(acked.get("agent_id"), str):
                named.add(acked["agent_id"])
            elif acked is not None and isinstance(acked.get("task_name"), str):
                found = by_path.get((r.thread_id, acked["task_name"]), [])
                if len(found) != 1:
                    problems.append(
                        f"{where}: {len(found)} child threads have agent path {acked['task_name']}"
                    )
                named.update(found)
            for item in r.collab.get(call.call_id, []):
                receivers = item.get("receiver_thread_ids")
                if isinstance(receivers, list):
                    named.update(x for x in receivers if isinstance(x, str))
                path = item.get("agent_path")
                if isinstance(path, str):
                    named.update(by_path.get((r.thread_id, path), []))
            if not named:
                continue  # the spawn failed (its output is an error text): no subtask exists
            if len(named) > 1:
                problems.append(
                    f"{where}: its evidence names several threads: {', '.join(sorted(named))}"
                )
                continue
            child = named.pop()
            if child not in rollouts:
                problems.append(f"{where}: child thread {child} has no rollout")
            elif parents.get(child) != r.thread_id:
                problems.append(f"{where}: child thread {child} names parent {parents.get(child)}")
            evidence = [NativeEvidence(r.path, f"#{call.ordinal} function_call {call.call_id}")]
            if output is not None:
                evidence.append(
                    NativeEvidence(r.path, f"#{output.ordinal} function_call_output {call.call_id}")
                )
            if child in rollouts:
                evidence.append(NativeEvidence(rollouts[child].path, f"#0 session_meta {child}"))
            if call.item_id is None:
                problems.append(f"{where}: the function_call has no item id")
            out.append(_Spawn(r, call, child, tuple(evidence)))
    return out


def _relations(
    rollouts: dict[str, Rollout],
    spawns: list[_Spawn],
    state: StateIndex | None,
    notes: list[str],
) -> list[NativeRelation]:
    out: list[NativeRelation] = []
    for s in spawns:
        parent = s.parent.thread_id
        evidence = s.evidence
        if state is not None and s.child in state.edges:
            evidence += (NativeEvidence(STATE_DB, f"thread_spawn_edges {parent} -> {s.child}"),)
        kinds: tuple[RelationType, ...] = ("spawn", "launch_acknowledged")
        for kind in kinds:
            if kind == "launch_acknowledged" and s.call.call_id not in s.parent.outputs:
                continue  # no acknowledgement was recorded
            out.append(
                NativeRelation(
                    type=kind,
                    parent_key=parent,
                    child_key=s.child,
                    tool_call_id=s.tool_call_id,
                    model_tool_ref=s.ref,
                    evidence=evidence,
                )
            )
        child = rollouts.get(s.child)
        if child is not None:
            state_name, line = child.state
            if state_name in ("completed", "failed") and line is not None:
                reason = next((e[3] for e in reversed(child.turn_events)), None)
                out.append(
                    NativeRelation(
                        type="child_completed" if state_name == "completed" else "child_failed",
                        parent_key=parent,
                        child_key=s.child,
                        tool_call_id=s.tool_call_id,
                        evidence=(NativeEvidence(child.path, f"#{line.ordinal} {line.item_type}"),),
                        note=f"turn aborted: {reason}"
                        if state_name == "failed" and reason
                        else None,
                    )
                )
    out += _deliveries(rollouts, spawns, notes)
    return out


def _deliveries(
    rollouts: dict[str, Rollout], spawns: Iterable[_Spawn], notes: list[str]
) -> list[NativeRelation]:
    """Results that entered the parent thread: wait outputs (v1) and message items.

    One recorded after the parent's last response (`codex exec` ended the turn) reached
    no model: no relation, and a note says so."""
    children: dict[str, set[str]] = {}
    for s in spawns:
        children.setdefault(s.parent.thread_id, set()).add(s.child)
    out: list[NativeRelation] = []
    for pid in sorted(children):
        r = rollouts[pid]
        mine = children[pid]
        paths = {
            rollouts[c].agent_path: c for c in mine if c in rollouts and rollouts[c].agent_path
        }
        for call in r.tool_calls:
            output = r.outputs.get(call.call_id)
            if not _is_multi_agent(call, "wait_agent") or output is None:
                continue
            status = (_json_object(output.output) or {}).get("status")
            if not isinstance(status, dict):
                continue  # v2 wait outputs carry no result; the agent_message does
            target = r.consuming_response(output.ordinal, output.history_sequence)
            for child in sorted(mine & set(status)):
                final = status[child]
                if target is None or not (isinstance(final, dict) and FINAL_STATUSES & set(final)):
                    continue
                ref = (call.call_id, call.item_id) if call.item_id else None
                out.append(
                    NativeRelation(
                        type="result_delivered",
                        parent_key=pid,
                        child_key=child,
                        tool_call_id=f"{ref[0]}|{ref[1]}" if ref else call.call_id,
                        model_tool_ref=ref,
                        evidence=(
                            NativeEvidence(r.path, f"#{call.ordinal} function_call {call.call_id}"),
                            NativeEvidence(
                                r.path, f"#{output.ordinal} function_call_output {call.call_id}"
                            ),
                        ),
                        target_response_id=target,
                        delivered_text=output.output,
                        note="wait_agent output",
                    )
                )
        for item in r.delivered:
            sender = _sender(item, mine, paths)
            if sender is None or not FINAL_STATUSES & set(item.status):
                continue
            target = r.consuming_response(item.ordinal, item.history_sequence)
            if target is None:
                notes.append(
                    f"thread {pid}: the result of child {sender} ({r.path} #{item.ordinal} "
                    f"{item.kind}) came after its last response; no model call received it"
                )
                continue
            out.append(
                NativeRelation(
                    type="result_delivered",
                    parent_key=pid,
                    child_key=sender,
                    tool_call_id=None,
                    evidence=(NativeEvidence(r.path, f"#{item.ordinal} {item.kind}"),),
                    target_response_id=target,
                    delivered_text=item.text,
                    note=item.kind,
                )
            )
    return out


def _sender(item: Delivered, mine: set[str], paths: dict[str | None, str]) -> str | None:
    if item.sender is None:
        return None
    if item.kind == "subagent_notification":
        return item.sender if item.sender in mine else None
    return paths.get(item.sender)


def _coverage(rollouts: dict[str, Rollout], remarks: list[str]) -> NativeCoverage:
    """Counts and ids per thread; `remarks` (results no model received) ride along as
    notes, the manifest's only place for a native fact that is neither a problem nor a
    relation."""
    notes = [COVERAGE_NOTE, *remarks]
    counts: dict[str, int] = {}
    ids: dict[str, frozenset[str]] = {}
    for tid, r in sorted(rollouts.items()):
        responses = {x.response_id for x in r.responses}
        counts[tid] = len(responses)
        ids[tid] = frozenset(responses)
        if r.token_counts != len(r.responses):
            notes.append(
                f"thread {tid}: {r.token_counts} token_count events, "
                f"{len(r.responses)} token_usage_records"
            )
    return NativeCoverage(basis="token_usage_count", ids=ids, counts=counts, notes=tuple(notes))


def _trajectory_blocks(
    rollouts: dict[str, Rollout], parents: dict[str, str | None]
) -> tuple[str, ...]:
    out: list[str] = []
    for tid, r in sorted(rollouts.items()):
        if _is_root(r, parents[tid]) and r.dynamic_tools:
            first, kind = r.dynamic_tools[0]
            out.append(f"{DYNAMIC_TOOLS_BLOCK}: {r.path} #{first} {kind} (root thread {tid})")
    return tuple(out)

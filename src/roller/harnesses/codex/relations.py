"""Codex relations: spawns, acknowledgements, delivered results and child outcomes,
from the threads' own rollout records (codex-cli 0.171.0, both tool generations).

- `spawn` + `launch_acknowledged`: a `spawn_agent` call (namespace `multi_agent_v1` or
  `collaboration`) whose output names the child — v1 `{"agent_id"}`, v2 `{"task_name"}`
  (the child's agent path) — cross-checked with the `item_completed` collab item of the
  same `call_id` and with the child's own parent. `model_tool_ref` is `(call_id, item
  id)`: finalize needs both in one output item of the parent's HTTP output.
- `result_delivered`: a v1 `wait_agent` output naming the child with a final status, a
  v1 `<subagent_notification>` or a v2 `FINAL_ANSWER` `agent_message`, bound to the
  first later response whose sampling record covers it (its text must be in that call);
  an item no response sampled reached no model: a note, no relation.
- `child_completed` / `child_failed`: the child's last own turn.
Problem codes (per `spawn_agent` call): `unexpected_count` (not one child with the agent
path its output names), `disagreement` (evidence naming several threads, a child naming
another parent), `missing_file` (a child without a rollout), `missing_field` (a
function_call without an item id).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roller.capture.models import RelationType
from roller.harnesses.base import NativeEvidence, NativeProblem, NativeRelation
from roller.harnesses.codex.rollout import Delivered, Rollout, ToolCall
from roller.harnesses.codex.state import STATE_DB, StateIndex

MULTI_AGENT_NAMESPACES = frozenset({"multi_agent_v1", "collaboration"})
# Final states of a v1 wait/notification status object (`{"completed": text}` …).
FINAL_STATUSES = frozenset({"completed", "errored"})


@dataclass(frozen=True)
class Spawn:
    """One spawn by `parent` and the child thread its evidence names. `call` is the
    `spawn_agent` function call, or (code mode) the `exec` call whose script made the
    spawn (`roller.harnesses.codex.nested`); `acknowledged`: the call's output, which
    the parent's model reads, carries the launch acknowledgement."""

    parent: Rollout
    call: ToolCall
    child: str
    evidence: tuple[NativeEvidence, ...]
    acknowledged: bool

    @property
    def ref(self) -> tuple[str, str] | None:
        """`(call_id, item id)`: what the parent's HTTP output must carry, both."""
        if self.call.item_id is None:
            return None
        return (self.call.call_id, self.call.item_id)

    @property
    def tool_call_id(self) -> str:
        ref = self.ref
        return f"{ref[0]}|{ref[1]}" if ref else self.call.call_id


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _is_multi_agent(call: ToolCall, name: str) -> bool:
    return call.name == name and call.namespace in MULTI_AGENT_NAMESPACES


def agent_paths(
    rollouts: dict[str, Rollout], parents: dict[str, str | None]
) -> dict[tuple[str, str], list[str]]:
    """(parent thread, agent path) -> the child threads with that path (v2 names a child
    by its path)."""
    by_path: dict[tuple[str, str], list[str]] = {}
    for tid, r in rollouts.items():
        parent, path = parents[tid], r.agent_path
        if parent is not None and path is not None:
            by_path.setdefault((parent, path), []).append(tid)
    return by_path


def children_named(
    r: Rollout, items: Iterable[dict[str, Any]], by_path: dict[tuple[str, str], list[str]]
) -> set[str]:
    """The child threads collab items name: v1 `receiver_thread_ids`, v2
    `agent_thread_id` and `agent_path` (a path of one of `r`'s children)."""
    named: set[str] = set()
    for item in items:
        receivers = item.get("receiver_thread_ids")
        if isinstance(receivers, list):
            named.update(x for x in receivers if isinstance(x, str))
        thread = item.get("agent_thread_id")
        if isinstance(thread, str) and thread:
            named.add(thread)
        path = item.get("agent_path")
        if isinstance(path, str):
            named.update(by_path.get((r.thread_id, path), []))
    return named


def checked_child(
    rollouts: dict[str, Rollout],
    parents: dict[str, str | None],
    r: Rollout,
    named: set[str],
    where: str,
    problems: list[NativeProblem],
) -> str | None:
    """The one child `named` holds, its rollout and parent checked; None when the
    evidence names no thread (a failed spawn: no subtask) or several (a problem)."""
    if not named:
        return None
    if len(named) > 1:
        message = f"its evidence names several threads: {', '.join(sorted(named))}"
        problems.append(NativeProblem("disagreement", message, where))
        return None
    child = next(iter(named))
    if child not in rollouts:
        message = f"child thread {child} has no rollout"
        problems.append(NativeProblem("missing_file", message, where))
    elif parents.get(child) != r.thread_id:
        message = f"child thread {child} names parent {parents.get(child)}"
        problems.append(NativeProblem("disagreement", message, where))
    return child


def spawns(
    rollouts: dict[str, Rollout], parents: dict[str, str | None], problems: list[NativeProblem]
) -> list[Spawn]:
    by_path = agent_paths(rollouts, parents)
    out: list[Spawn] = []
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
                    message = f"{len(found)} child threads have agent path {acked['task_name']}"
                    problems.append(NativeProblem("unexpected_count", message, where))
                named.update(found)
            named |= children_named(r, r.collab.get(call.call_id, []), by_path)
            child = checked_child(rollouts, parents, r, named, where, problems)
            if child is None:
                continue  # the spawn failed (its output is an error text): no subtask exists
            evidence = [NativeEvidence(r.path, f"#{call.ordinal} function_call {call.call_id}")]
            if output is not None:
                evidence.append(
                    NativeEvidence(r.path, f"#{output.ordinal} function_call_output {call.call_id}")
                )
            if child in rollouts:
                evidence.append(NativeEvidence(rollouts[child].path, f"#0 session_meta {child}"))
            if call.item_id is None:
                message = "the function_call has no item id"
                problems.append(NativeProblem("missing_field", message, where))
            out.append(Spawn(r, call, child, tuple(evidence), acknowledged=output is not None))
    return out


def relations(
    rollouts: dict[str, Rollout],
    spawns: list[Spawn],
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
            if kind == "launch_acknowledged" and not s.acknowledged:
                continue  # no acknowledgement reached the parent's model
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
    rollouts: dict[str, Rollout], spawns: Iterable[Spawn], notes: list[str]
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
        out += _wait_deliveries(pid, r, mine)
        out += _message_deliveries(pid, r, mine, paths, notes)
    return out


def _wait_deliveries(pid: str, r: Rollout, mine: set[str]) -> list[NativeRelation]:
    """v1: a `wait_agent` output whose status names a child's final state."""
    out: list[NativeRelation] = []
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
    return out


def _message_deliveries(
    pid: str, r: Rollout, mine: set[str], paths: dict[str | None, str], notes: list[str]
) -> list[NativeRelation]:
    """A child's final message item in the parent's thread, before a response that read it."""
    out: list[NativeRelation] = []
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

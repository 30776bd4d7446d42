"""Spawns and waits a code-mode `exec` script made, bound to that `exec` call.

Checked against codex-cli 0.171.0 in code mode (runs of 2026-12-01,
docs/harnesses.md, "Codex CLI"): v1 (`gpt-5.6-luna`) scripts call
`tools.multi_agent_v1__spawn_agent(…)` / `…__wait_agent(…)`, v2 ones (with
`[features.multi_agent_v2] non_code_mode_only = false`) `tools.collaboration__…`. The
parent's rollout records each nested call only as an `item_completed` item —
`CollabAgentToolCall` (v1 spawn and every wait: `tool`, `receiver_thread_ids`,
`agents_states`) or `SubAgentActivity` (v2 spawn: `kind: "started"`, `agent_thread_id`,
`agent_path`) — whose `id` is the nested call's own `exec-<uuid>`. The chain, all by ids:
1. the rollout trace (`roller.harnesses.codex.trace`) names that id as a call of a code
   cell, and the cell as run by the `exec` call with model-visible `call_id` C;
2. the parent's rollout has that `exec` `custom_tool_call` (`call_id` C, item id `ctc_…`),
   which finalize must find, both ids, in the parent call's HTTP output;
3. the item names the child, whose own lineage must name the parent (as for a direct spawn).
A nested spawn no trace binds to an `exec` call of its thread still yields its `spawn`
relation, with the nested id as its tool-call id and no model reference: finalize finds
no parent call emitting it and the relation stays `unknown` — never bound by position.
The `exec` output is what the parent's model reads: it acknowledges the launch when it
names the child (v1 `agent_id`, v2 agent path), and delivers a v1 wait's result when it
names the child and the wait item gives the child a final status.

Problem codes: those of `.relations` for the child (`disagreement`, `missing_file`), and
`foreign_record` (a trace that puts the nested call in another thread).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from roller.harnesses.base import NativeEvidence, NativeProblem, NativeRelation
from roller.harnesses.codex.relations import (
    FINAL_STATUSES,
    Spawn,
    agent_paths,
    checked_child,
    children_named,
)
from roller.harnesses.codex.rollout import Rollout, ToolCall
from roller.harnesses.codex.trace import NestedCall, Trace

EXEC_TOOL = "exec"
# A script's own text naming the call: a consistency check only, never the binding.
_INVOKES_SPAWN = re.compile(r"\btools\.\w*spawn_agent\s*\(")


@dataclass(frozen=True)
class Nested:
    """One nested collab call of a parent thread, and the `exec` call the trace binds."""

    parent: Rollout
    tool_call_id: str
    items: tuple[dict[str, Any], ...]
    traced: NestedCall | None
    call: ToolCall | None  # the `exec` custom tool call, when bound

    @property
    def where(self) -> str:
        return f"{self.parent.path}: #{self.parent.collab_at.get(self.tool_call_id)}"

    def evidence(self) -> list[NativeEvidence]:
        r, t = self.parent, self.traced
        out: list[NativeEvidence] = []
        if self.call is not None:
            ref = f"#{self.call.ordinal} custom_tool_call {self.call.call_id}"
            out.append(NativeEvidence(r.path, ref))
        if t is not None:
            if t.cell_ref is not None:
                out.append(
                    NativeEvidence(t.file, f"{t.cell_ref} code_cell_started {t.exec_call_id}")
                )
            out.append(NativeEvidence(t.file, f"{t.ref} tool_call_started {self.tool_call_id}"))
        at = r.collab_at.get(self.tool_call_id)
        out.append(NativeEvidence(r.path, f"#{at} item_completed {self.tool_call_id}"))
        return out


def _is_spawn(item: dict[str, Any]) -> bool:
    if item.get("type") == "CollabAgentToolCall":
        return item.get("tool") == "spawn_agent"
    return item.get("type") == "SubAgentActivity" and item.get("kind") == "started"


def _is_wait(item: dict[str, Any]) -> bool:
    return item.get("type") == "CollabAgentToolCall" and item.get("tool") == "wait"


def nested_calls(
    rollouts: dict[str, Rollout], trace: Trace, problems: list[NativeProblem]
) -> dict[str, list[Nested]]:
    """Per thread, its collab items that no direct tool call of its own explains."""
    out: dict[str, list[Nested]] = {}
    for tid in sorted(rollouts):
        r = rollouts[tid]
        direct = {c.call_id for c in r.tool_calls if c.item != "custom_tool_call"}
        execs = {c.call_id: c for c in r.tool_calls if c.name == EXEC_TOOL}
        for key in sorted(r.collab, key=lambda k: r.collab_at.get(k, 0)):
            if key in direct:
                continue
            traced = trace.nested.get(key)
            if traced is not None and traced.thread_id != r.thread_id:
                message = f"the trace puts nested call {key} in thread {traced.thread_id}"
                problems.append(NativeProblem("foreign_record", message, traced.where))
                traced = None
            exec_id = traced.exec_call_id if traced is not None else None
            call = execs.get(exec_id) if exec_id is not None else None
            out.setdefault(tid, []).append(Nested(r, key, tuple(r.collab[key]), traced, call))
    return out


def _names(text: str, child: str, rollouts: dict[str, Rollout]) -> bool:
    """Whether an `exec` output names the child: its thread id (v1) or its agent path as
    a JSON string (v2 `{"task_name": "/root/…"}`)."""
    path = rollouts[child].agent_path if child in rollouts else None
    return child in text or (path is not None and f'"{path}"' in text)


def nested_spawns(
    rollouts: dict[str, Rollout],
    parents: dict[str, str | None],
    nested: dict[str, list[Nested]],
    problems: list[NativeProblem],
    notes: list[str],
) -> tuple[list[Spawn], list[NativeRelation]]:
    """Spawns bound to their `exec` call, and the `unknown` ones no trace binds."""
    by_path = agent_paths(rollouts, parents)
    bound: list[Spawn] = []
    unbound: list[NativeRelation] = []
    for tid in sorted(nested):
        r = rollouts[tid]
        for n in nested[tid]:
            items = [i for i in n.items if _is_spawn(i)]
            named = children_named(r, items, by_path)
            where = f"{n.where} nested spawn {n.tool_call_id}"
            child = checked_child(rollouts, parents, r, named, where, problems) if items else None
            if child is None:
                continue
            evidence = n.evidence()
            if child in rollouts:
                evidence.append(NativeEvidence(rollouts[child].path, f"#0 session_meta {child}"))
            if n.call is None:
                unbound.append(_unbound(n, child, evidence))
                continue
            if not _INVOKES_SPAWN.search(n.call.arguments or ""):
                notes.append(
                    f"{where}: exec {n.call.call_id}'s script does not show the spawn; "
                    "bound by the rollout trace"
                )
            output = r.outputs.get(n.call.call_id)
            if output is not None:
                ref = f"#{output.ordinal} custom_tool_call_output {n.call.call_id}"
                evidence.append(NativeEvidence(r.path, ref))
            acked = output is not None and _names(output.output, child, rollouts)
            bound.append(Spawn(r, n.call, child, tuple(evidence), acknowledged=acked))
    return bound, unbound


def _unbound(n: Nested, child: str, evidence: list[NativeEvidence]) -> NativeRelation:
    if n.traced is None:
        why = "no rollout trace binds it to an exec call"
    else:
        why = f"the trace binds it to exec call {n.traced.exec_call_id}, not in the rollout"
    return NativeRelation(
        type="spawn",
        parent_key=n.parent.thread_id,
        child_key=child,
        tool_call_id=n.tool_call_id,
        evidence=tuple(evidence),
        note=f"spawned inside a code-mode script; {why}",
    )


def nested_deliveries(
    rollouts: dict[str, Rollout], spawned: list[Spawn], nested: dict[str, list[Nested]]
) -> list[NativeRelation]:
    """v1 waits inside scripts whose `exec` output gives a child's final status."""
    children: dict[str, set[str]] = {}
    for s in spawned:
        children.setdefault(s.parent.thread_id, set()).add(s.child)
    out: list[NativeRelation] = []
    for pid in sorted(children):
        for n in nested.get(pid, []):
            for item in (i for i in n.items if _is_wait(i)):
                out += _wait_results(n, item, children[pid])
    return out


def _wait_results(n: Nested, item: dict[str, Any], mine: set[str]) -> list[NativeRelation]:
    r, call = n.parent, n.call
    output = r.outputs.get(call.call_id) if call is not None else None
    states = item.get("agents_states")
    if call is None or call.item_id is None or output is None or not isinstance(states, dict):
        return []
    target = r.consuming_response(output.ordinal, output.history_sequence)
    ref = (call.call_id, call.item_id)
    out_ref = f"#{output.ordinal} custom_tool_call_output {call.call_id}"
    out: list[NativeRelation] = []
    for child in sorted(mine & set(states)):
        final = states[child]
        if target is None or not (isinstance(final, dict) and FINAL_STATUSES & set(final)):
            continue
        line = next((x for x in output.output.splitlines() if child in x), None)
        if line is None:
            continue  # the script did not show the model this child's status
        out.append(
            NativeRelation(
                type="result_delivered",
                parent_key=r.thread_id,
                child_key=child,
                tool_call_id=f"{ref[0]}|{ref[1]}",
                model_tool_ref=ref,
                evidence=(*n.evidence(), NativeEvidence(r.path, out_ref)),
                target_response_id=target,
                delivered_text=line,
                note="wait_agent inside an exec script",
            )
        )
    return out

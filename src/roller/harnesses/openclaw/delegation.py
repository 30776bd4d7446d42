"""OpenClaw's delegations as native relations: spawn, acknowledgement, completion, announce.

Facts relied on (2026.9.6, measured in every API and both tool surfaces):
- A spawn is a parent tool call whose result says `{"status": "accepted",
  "childSessionKey": K, "runId": R, …}` (the launch acknowledgement; the child runs
  later, in the background). Direct surface: a `toolResult` with `toolName
  "sessions_spawn"`, `toolCallId` the call's id, `details` the accepted object. Tool
  Search surface: the model calls `tool_call{"id": "sessions_spawn", …}`; a custom
  message `openclaw.nested-tool.v1` then records `details.toolName "sessions_spawn"`,
  `details.parentToolCallId` (the `tool_call` id) and `details.result.details` (the
  accepted object). The emitting assistant event is the parent's own event carrying
  that tool call id; Responses ids are `call_id|item_id` there, both halves bound.
- Completion: the child's latest `subagent_runs` row (`execution.status terminal`,
  `execution.outcome.status` `ok` → completed, anything else failed), else its
  `task_runs` row (`succeeded` → completed, another terminal status → failed).
- The result reaches the requester as an announce turn in the requester's session,
  run id `announce:v1:<child key>:<child run id>` (the child run id may itself be an
  `…:wake` run). Its first own assistant event's `responseId` is the call the
  notification was delivered to (`result_delivered`, the child's result text required
  in that call's actual request); each later call of the same announce run also carries
  it (`result_in_context` each, bound the same way). When the child ends while the
  requester's turn is still running, OpenClaw steers the result into that turn instead
  (its pending tool call is answered "Skipped to process an incoming message."): the
  notification is then a stored user message whose `idempotencyKey` is
  `announce:v1:<child key>:<child run id>:active-wake`, and the calls that received it are
  the assistant events whose transcript chain (`parentId`) reaches it before any other
  user message. A call that carries the text in its
  history under another run is not bound (`carried_forward=False`): the text alone
  proves nothing. An announce run whose events name no response id cannot be bound: the
  main trajectory is barred (`announce_unbound: …`). A delivery the store calls
  `delivered` with no announce event left is an unbound `result_delivered` (unknown).
- An event's run id is as OpenClaw meant it: one it stored masked was read back
  (`roller.harnesses.openclaw.masking`), and its note says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from roller.capture.models import RelationType
from roller.harnesses.base import NativeEvidence, NativeRelation
from roller.harnesses.openclaw.store import STATE_DB, Event, Store, SubagentRun, TaskRun
from roller.harnesses.openclaw.tree import NATIVE_ROOT, Tree

SPAWN_TOOL = "sessions_spawn"
NESTED_TOOL = "openclaw.nested-tool.v1"
ANNOUNCE_PREFIX = "announce:v1:"
_COMPLETED_TASK = "succeeded"
_TERMINAL_TASK = frozenset({"succeeded", "failed", "timed_out", "cancelled", "lost"})


@dataclass(frozen=True)
class Spawn:
    parent_key: str
    child_key: str
    tool_call_id: str
    source_response_id: str | None
    evidence: NativeEvidence
    run_id: str | None = None  # the child run the acceptance names (`runId`)

    @property
    def model_tool_ref(self) -> tuple[str, str] | None:
        call_id, bar, item_id = self.tool_call_id.partition("|")
        return (call_id, item_id) if bar else None


def _evidence(e: Event) -> NativeEvidence:
    return NativeEvidence(f"{NATIVE_ROOT}/{e.db}", f"session {e.session_id} event {e.id}")


def _accepted(e: Event) -> tuple[str, str, str | None] | None:
    """(tool call id, child key, child run id) when `e` records an accepted spawn."""

    def accepted(details: Any) -> tuple[str, str | None] | None:
        if isinstance(details, dict) and details.get("status") == "accepted":
            child, run = details.get("childSessionKey"), details.get("runId")
            if isinstance(child, str):
                return child, run if isinstance(run, str) else None
        return None

    if e.role == "toolResult" and e.tool_name == SPAWN_TOOL and e.tool_call_id:
        found = accepted(e.details)
        return (e.tool_call_id, *found) if found else None
    if e.custom_type == NESTED_TOOL and isinstance(e.details, dict):
        d = e.details
        result = d["result"] if isinstance(d.get("result"), dict) else {}
        outer = d.get("parentToolCallId")
        found = accepted(result.get("details"))
        if d.get("toolName") == SPAWN_TOOL and isinstance(outer, str) and found:
            return (outer, *found)
    return None


def spawns(tree: Tree) -> list[Spawn]:
    emitting = {
        (e.session_id, call.id): e.response_id
        for e in tree.own
        if e.role == "assistant"
        for call in e.tool_calls
    }
    out: list[Spawn] = []
    for e in tree.own:
        found = _accepted(e)
        if found is None:
            continue
        tool_call_id, child, run = found
        out.append(
            Spawn(
                parent_key=tree.key_of[e.session_id],
                child_key=child,
                tool_call_id=tool_call_id,
                source_response_id=emitting.get((e.session_id, tool_call_id)),
                evidence=_evidence(e),
                run_id=run,
            )
        )
    return out


def _registered(store: Store, spawn: Spawn) -> tuple[SubagentRun | None, TaskRun | None]:
    """The child's `subagent_runs` and `subagent` `task_runs` rows, each only when it
    names the run the acceptance did (a later `…:wake` row names it as `taskRunId`)."""

    def names(*ids: str | None) -> bool:
        return spawn.run_id is None or spawn.run_id in ids

    run = next(
        (
            r
            for r in store.subagent_runs
            if r.child_key == spawn.child_key and names(r.run_id, r.task_run_id)
        ),
        None,
    )
    task = next(
        (
            t
            for t in store.task_runs
            if t.runtime == "subagent" and t.child_key == spawn.child_key and names(t.run_id)
        ),
        None,
    )
    return run, task


def _completion(store: Store, spawn: Spawn) -> tuple[RelationType | None, NativeEvidence | None]:
    """("child_completed" | "child_failed" | None, evidence) from the state store."""
    run, task = _registered(store, spawn)
    if run is not None and run.execution == "terminal":
        kind: RelationType = "child_completed" if run.outcome == "ok" else "child_failed"
        return kind, NativeEvidence(f"{NATIVE_ROOT}/{STATE_DB}", f"subagent_runs {run.run_id}")
    if task is not None and task.status in _TERMINAL_TASK:
        done: RelationType = "child_completed" if task.status == _COMPLETED_TASK else "child_failed"
        return done, NativeEvidence(f"{NATIVE_ROOT}/{STATE_DB}", f"task_runs {task.run_id}")
    return None, None


def result_text(store: Store, spawn: Spawn) -> str | None:
    run, task = _registered(store, spawn)
    if run is not None and run.result_text:
        return run.result_text
    return task.summary if task is not None and task.summary else None


def announce_events(tree: Tree, spawn: Spawn) -> list[tuple[Event, str]]:
    """The requester's own assistant events that received the child's result, in store
    order, each with the native id of the notification it received: those of the child's
    announce runs (the run id), and those answering a steered delivery (its key)."""
    prefix = f"{ANNOUNCE_PREFIX}{spawn.child_key}:"
    mine = [e for e in tree.own if tree.key_of[e.session_id] == spawn.parent_key]
    received: dict[int, str] = {
        id(e): e.run_id or ""
        for e in mine
        if e.role == "assistant" and (e.run_id or "").startswith(prefix)
    }
    for steered in mine:
        if steered.role == "user" and (steered.idempotency_key or "").startswith(prefix):
            for answer in _answering(mine, steered):
                received.setdefault(id(answer), steered.idempotency_key or "")
    return [(e, received[id(e)]) for e in mine if id(e) in received]


def notification_ids(tree: Tree, found: list[Spawn]) -> dict[str, str]:
    """Response id -> the id of the child notification that call received."""
    return {
        e.response_id: nid
        for spawn in found
        for e, nid in announce_events(tree, spawn)
        if e.response_id is not None
    }


def _answering(session: list[Event], injected: Event) -> list[Event]:
    """Assistant events of the session whose transcript chain reaches `injected` before
    any other user message: the calls the steered notification was in."""
    by_id: dict[str | None, Event] = {
        e.id: e for e in session if e.id is not None and e.session_id == injected.session_id
    }
    out: list[Event] = []
    for e in session:
        if e.role != "assistant" or e.session_id != injected.session_id:
            continue
        parent, seen = by_id.get(e.parent_id), set[str | None]()
        while parent is not None and parent.id not in seen:
            seen.add(parent.id)
            if parent is injected:
                out.append(e)
                break
            if parent.role == "user":
                break
            parent = by_id.get(parent.parent_id)
    return out


def _deliveries(tree: Tree, store: Store, spawn: Spawn) -> Iterator[NativeRelation]:
    events = announce_events(tree, spawn)
    text = result_text(store, spawn) or f"session_key: {spawn.child_key}"
    run, _ = _registered(store, spawn)
    if not events:
        if run is not None and run.delivery == "delivered":
            yield NativeRelation(
                type="result_delivered",
                parent_key=spawn.parent_key,
                child_key=spawn.child_key,
                tool_call_id=None,
                evidence=(
                    NativeEvidence(f"{NATIVE_ROOT}/{STATE_DB}", f"subagent_runs {run.run_id}"),
                ),
                delivered_text=text,
                carried_forward=False,
                note="the store says delivered, but no announce turn of this child is left",
            )
        return
    for n, (e, notification) in enumerate(events):
        yield NativeRelation(
            type="result_delivered" if n == 0 else "result_in_context",
            parent_key=spawn.parent_key,
            child_key=spawn.child_key,
            tool_call_id=None,
            evidence=(_evidence(e),),
            target_response_id=e.response_id,
            delivered_text=text,
            carried_forward=False,
            note=_announce_note(e, notification),
        )


def _announce_note(e: Event, notification: str) -> str:
    if notification != e.run_id:
        return f"{notification}: steered into the running turn (run {e.run_id})"
    if e.stored_run_id is not None:
        return f"announce run {e.run_id} (stored masked as {e.stored_run_id})"
    return f"announce run {e.run_id}"


def relations(tree: Tree, store: Store, found: list[Spawn]) -> list[NativeRelation]:
    out: list[NativeRelation] = []
    for spawn in found:
        common: Mapping[str, Any] = {
            "parent_key": spawn.parent_key,
            "child_key": spawn.child_key,
            "tool_call_id": spawn.tool_call_id,
            "evidence": (spawn.evidence,),
            "model_tool_ref": spawn.model_tool_ref,
            "source_response_id": spawn.source_response_id,
        }
        out.append(NativeRelation(type="spawn", **common))
        out.append(NativeRelation(type="launch_acknowledged", **common))
        kind, evidence = _completion(store, spawn)
        if kind is not None:
            out.append(
                NativeRelation(
                    type=kind,
                    parent_key=spawn.parent_key,
                    child_key=spawn.child_key,
                    tool_call_id=spawn.tool_call_id,
                    evidence=(evidence,) if evidence else (),
                )
            )
        out += _deliveries(tree, store, spawn)
    return out


def unbound_announces(tree: Tree, found: list[Spawn], roots: set[str]) -> list[str]:
    """Main-trajectory bars: a root's announce run that names no response id."""
    bars = []
    for spawn in found:
        if spawn.parent_key not in roots:
            continue
        runs = {nid for e, nid in announce_events(tree, spawn) if e.response_id is None}
        bars += [f"announce_unbound: announce run {r} names no response id" for r in sorted(runs)]
    return bars

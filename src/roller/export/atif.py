"""`roller export atif PATH -o DIR`: one ATIF v1.8 trajectory per attempt.

ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001, v1.8) as plain JSON:
- the root document's steps come from the main trajectory (`roller.export.trajectory`:
  root only, so no subtask message is ever a root step); steps as `atif_steps` says;
- every child participant is an embedded `subagent_trajectories` entry of its parent's
  document (a grandchild inside its parent child's), `trajectory_id` = its participant
  id, its own steps from its own calls segmented by the same rules;
- the spawning step's observation references the child with `subagent_trajectory_ref`
  (`trajectory_id`): the step whose call emitted the tool call of the established
  `spawn` relation, the result of that tool call (one is added when the result never
  entered a later input, e.g. a background launch). A child no established spawn binds
  stays embedded, unreferenced, and `notes` says so;
- a fork child's inherited prefix — the leading items of its first request that are the
  same messages as the spawning call's input plus output — is `is_copied_context`;
- `agent.tool_definitions`: the participant's first request's tools as OpenAI-style
  function tools; `agent.extra.request_params` the rest of that request minus items,
  system prompt, tools and harness-private fields (`private_fields`);
- `final_metrics` totals the document's own steps.
Only attempts with an exportable main trajectory are written (blocked ones with
`include_blocked`); the others are counted in `Omissions` with their reason.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from roller.capture.models import CallRecord, ParticipantRecord, RelationRecord
from roller.capture.reader import CallLines, Capture
from roller.capture.trajectory_record import TrajectorySegment
from roller.export.atif_steps import Steps, build_steps
from roller.export.omissions import Omissions
from roller.export.openai_messages import params_of
from roller.export.trajectory import build_trajectory, participant_segments
from roller.wire import Codec, codec_named

SCHEMA_VERSION = "ATIF-v1.8"


def _tool_id(relation: RelationRecord) -> str | None:
    """The chat tool-call id of a relation (Responses: the `call_id` half)."""
    if relation.model_tool_ref is not None:
        return relation.model_tool_ref.call_id
    return relation.tool_call_id


def _keys(codec: Codec, items: list[Any]) -> list[Hashable]:
    return [k for k in map(codec.item_key, items) if k is not None]


def copied_prefix(
    child_first: CallRecord, spawning: CallRecord | None, outputs: set[Hashable]
) -> int:
    """How many leading items of the child's first request repeat the spawning call's
    input plus output (compared as the same message) — counted only when that shared
    prefix carries something the parent's model produced (`outputs`: the keys of the
    parent's output items). A child that merely starts with the same system or
    environment messages as its parent (a fresh context) has no copied context."""
    codec = codec_named(child_first.protocol)
    if spawning is None or codec is None or child_first.protocol != spawning.protocol:
        return 0
    mine = codec.history(child_first.context)
    theirs = codec.history(spawning.context)
    if mine is None or theirs is None:
        return 0
    parent = _keys(codec, theirs.items + codec.output_items(spawning.output))
    shared: list[Hashable] = []
    for item in mine.items:
        key = codec.item_key(item)
        if len(shared) >= len(parent) or key != parent[len(shared)]:
            break
        shared.append(key)
    return len(shared) if any(k in outputs for k in shared) else 0


def output_keys(calls: list[CallRecord]) -> set[Hashable]:
    codecs = ((c, codec_named(c.protocol)) for c in calls)
    return {k for c, codec in codecs if codec for k in _keys(codec, codec.output_items(c.output))}


class _Build:
    """Builds the documents of one capture."""

    def __init__(self, capture: Capture, omissions: Omissions) -> None:
        # Every call read once and held without its context (what the steps read: ~a
        # few KB a call where a context is tens of KiB); a context is read again from
        # its line when needed (an agent's first call, a spawning call), and a
        # subagent's calls whole while its segments are made, one agent at a time.
        # (Holding every call whole peaked at 3.5x calls.jsonl; reading the file again
        # per agent took a 30-agent capture of 1k calls 100 s.)
        self.capture = capture
        self.lines = CallLines(capture.paths)
        self.omissions = omissions
        self.calls: dict[str, CallRecord] = {}  # without contexts
        self.at: dict[str, int] = {}  # call id -> where its line starts
        self.own: dict[str | None, list[tuple[int, CallRecord]]] = {}  # in file order
        for offset, call in self.lines.light():
            self.calls[call.call_id] = call
            self.at[call.call_id] = offset
            self.own.setdefault(call.participant_id, []).append((offset, call))
        self.participants = {p.participant_id: p for p in capture.manifest.participants}
        self.spawns = {
            r.child_participant_id: r
            for r in capture.relations
            if r.type == "spawn" and r.status == "established" and r.child_participant_id
        }

    def whole(self, call_id: str) -> CallRecord:
        """The call, context included, read again from its line."""
        return self.lines.whole([self.at[call_id]])[0]

    def children_of(self, parent: ParticipantRecord) -> list[ParticipantRecord]:
        root_id = next(
            (p.participant_id for p in self.participants.values() if p.role == "root"), None
        )
        out = []
        for p in self.capture.manifest.participants:
            if p.role != "child":
                continue
            owner = (
                p.parent_participant_id if p.parent_participant_id in self.participants else root_id
            )
            if owner == parent.participant_id:
                out.append(p)
        return out

    def agent(self, participant: ParticipantRecord, first: CallRecord | None) -> dict[str, Any]:
        """The agent's description, from its first call (`first`, context included)."""
        harness = self.capture.manifest.harness
        agent: dict[str, Any] = {"name": harness.name, "version": harness.version or "unknown"}
        extra: dict[str, Any] = {
            "participant_id": participant.participant_id,
            "role": participant.role,
            "agent_name": participant.name,
            "native_ids": dict(participant.native_ids),
        }
        if first is not None:
            agent["model_name"] = first.model
            codec = codec_named(first.protocol)
            history = codec.history(first.context) if codec is not None else None
            tools = codec.chat.tools(history.tools).tools if codec and history else ()
            agent["tool_definitions"] = list(tools)
            params, removed = params_of(first, harness.name)
            extra["request_params"] = params
            if removed:
                extra["left_out"] = list(removed)
                self.omissions.strip(removed)
        agent["extra"] = extra
        return agent

    def document(
        self, participant: ParticipantRecord, segments: list[TrajectorySegment], notes: list[str]
    ) -> dict[str, Any]:
        copied = 0
        spawn = self.spawns.get(participant.participant_id)
        first = (  # read once: its context gives the agent's tools and the copied prefix
            self.whole(segments[0].requests[0].call_id)
            if segments and segments[0].requests
            else None
        )
        if participant.role == "child" and first is not None:
            source = (spawn.source_call_id or "") if spawn else ""
            spawning = self.whole(source) if source in self.at else None
            parent_calls = (
                [c for _, c in self.own.get(spawning.participant_id, [])] if spawning else []
            )
            copied = copied_prefix(first, spawning, output_keys(parent_calls))
        steps = build_steps(segments, self.calls, copied)
        subagents = [self.child(child, steps, notes) for child in self.children_of(participant)]
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "session_id": self.capture.manifest.capture_scope,
            "trajectory_id": participant.participant_id,
            "agent": self.agent(participant, first),
            "steps": [_pruned(s) for s in steps.steps],
            "final_metrics": _final_metrics(steps),
        }
        if subagents:
            doc["subagent_trajectories"] = subagents
        if steps.problems:
            doc.setdefault("extra", {})["problems"] = sorted(set(steps.problems))
        return doc

    def child(
        self, child: ParticipantRecord, parent_steps: Steps, notes: list[str]
    ) -> dict[str, Any]:
        own = self.lines.whole([at for at, _ in self.own.get(child.participant_id, [])])
        held = Capture(self.capture.paths, self.capture.manifest, own, self.capture.relations)
        segments, problems = participant_segments(held, child.participant_id)
        del own, held  # (one agent's calls held at a time)
        doc = self.document(child, segments, notes)
        doc["extra"] = {**doc.get("extra", {}), "state": child.state}
        if problems:
            doc["extra"]["segmentation_problems"] = [p.model_dump(mode="json") for p in problems]
        spawn = self.spawns.get(child.participant_id)
        step = parent_steps.agent_steps.get(spawn.source_call_id or "") if spawn else None
        tool_id = _tool_id(spawn) if spawn else None
        if (
            spawn is None
            or step is None
            or tool_id not in {c["tool_call_id"] for c in step.get("tool_calls", [])}
        ):
            notes.append(
                f"child {child.participant_id} is embedded but not referenced: "
                "no established spawn binds it to a step"
            )
            return doc
        ref = {"trajectory_id": child.participant_id, "extra": {"relation_id": spawn.relation_id}}
        results = step.setdefault("observation", {"results": []})["results"]
        result = next((r for r in results if r.get("source_call_id") == tool_id), None)
        if result is None:
            result = {"source_call_id": tool_id}
            results.append(result)
        result.setdefault("subagent_trajectory_ref", []).append(ref)
        return doc


def _pruned(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if v is not None}


def _final_metrics(steps: Steps) -> dict[str, Any]:
    def total(name: str) -> int:
        return sum(int(s.get("metrics", {}).get(name) or 0) for s in steps.steps)

    return {
        "total_prompt_tokens": total("prompt_tokens"),
        "total_completion_tokens": total("completion_tokens"),
        "total_cached_tokens": total("cached_tokens"),
        "total_steps": len(steps.steps),
    }


def atif_document(
    capture: Capture, omissions: Omissions, include_blocked: bool = False
) -> dict[str, Any] | None:
    """The attempt's ATIF trajectory; None (counted in `omissions`) when its main
    trajectory was not built, or is blocked and blocked ones were not asked for."""
    record = build_trajectory(capture)
    if not record.built:
        omissions.leave_out("not_built:" + ",".join(record.export_blocked_by))
        return None
    if record.export_status != "exportable" and not include_blocked:
        omissions.leave_out("blocked:" + ",".join(record.export_blocked_by))
        return None
    build = _Build(capture, omissions)
    root = build.participants[str(record.root_participant_id)]
    notes: list[str] = []
    doc = build.document(root, list(record.segments), notes)
    m = capture.manifest
    doc["extra"] = {
        **doc.get("extra", {}),
        "roller": {
            "sample_id": m.sample_id,
            "attempt": m.attempt,
            "capture_scope": m.capture_scope,
            "capture_status": m.capture_status,
            "main_trajectory_export_status": record.export_status,
            "main_trajectory_export_blocked_by": list(record.export_blocked_by),
        },
    }
    if notes:
        doc["notes"] = "; ".join(notes)
    omissions.written += 1
    return doc

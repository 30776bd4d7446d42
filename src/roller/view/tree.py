"""The call tree of a capture, expanded by agent, as plain data.

Shape: each participant node lists its calls in order; a child participant hangs under
the call that spawned it (the `source_call_id` of its established `spawn` relation), or
under its parent's `unknown` bucket when no spawn relation binds it to a call. Calls
that no participant owns go under a top-level `unattributed` node. Pure: a `Capture` in,
nested dicts out (the `--json` output), nothing copied to disk. Built from a small
per-call index (`CallIndex`, one pass over calls.jsonl) and one pass over the relations,
so memory grows with the number of calls by a summary each, not by their contexts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roller.capture.models import CallRecord, Manifest, ParticipantRecord, RelationRecord
from roller.capture.reader import Capture

# The order a child's life unfolds in, for a readable label.
_LINK_ORDER = (
    "launch_acknowledged",
    "launch_ack_in_context",
    "child_completed",
    "child_failed",
    "result_delivered",
    "result_in_context",
)


def call_summary(call: CallRecord) -> dict[str, Any]:
    usage = call.usage
    return {
        "call_id": call.call_id,
        "sequence": call.sequence,
        "kind": call.kind,
        "protocol": call.protocol,
        "model": call.model,
        "response_model": call.response_model,
        "response_id": call.response_id,
        "status": call.response.status,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "tool_calls": [{"name": t.name, "id": t.ref or t.id} for t in call.tool_refs.emitted],
        "execution_status": call.execution_status,
        "identity_status": call.identity_status,
        "capture_status": call.capture_status,
        "export_status": call.export_status,
        "export_blocked_by": list(call.export_blocked_by),
        "children": [],
    }


def participant_summary(p: ParticipantRecord) -> dict[str, Any]:
    """Who an agent is, as the tree and the HTML page show it."""
    return {
        "participant_id": p.participant_id,
        "role": p.role,
        "name": p.name,
        "depth": p.depth,
        "state": p.state,
        "native_ids": dict(p.native_ids),
    }


@dataclass
class CallIndex:
    """What the tree needs of every call, from one pass that holds a call at a time:
    each call's summary (`call_summary`: ids, kind, statuses, sizes, tool calls; no
    context, no output), the calls no participant owns, in order, and the token totals."""

    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    unattributed: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    _placed: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, calls: Iterable[CallRecord]) -> CallIndex:
        index = cls()
        for c in calls:
            index.add(c)
        return index

    def add(self, c: CallRecord) -> None:
        self.summaries[c.call_id] = call_summary(c)
        if c.participant_id is None:
            self.unattributed.append(call_summary(c))
        if c.usage:
            self.input_tokens += c.usage.input_tokens or 0
            self.output_tokens += c.usage.output_tokens or 0

    def node(self, call_id: str) -> dict[str, Any]:
        """The call's tree node: its summary itself the first time (a valid capture
        places each call once, and a copy per call was a third of the tree's memory), a
        fresh copy with its own `children` list any later time."""
        if call_id not in self._placed:
            self._placed.add(call_id)
            return self.summaries[call_id]
        return {**self.summaries[call_id], "children": []}


@dataclass
class TokenCounts:
    """Each call's token counts (None as 0) and the capture's totals: what the HTML page
    rolls up over its agents. The page writes each call's summary with its detail, so
    this is all it keeps of a call (~0.1 KB, where a `CallIndex` summary is ~3 KB)."""

    calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (input, output)
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, c: CallRecord) -> None:
        usage = c.usage
        counts = (usage.input_tokens or 0, usage.output_tokens or 0) if usage else (0, 0)
        self.calls[c.call_id] = counts
        self.input_tokens += counts[0]
        self.output_tokens += counts[1]


def build_tree(capture: Capture) -> dict[str, Any]:
    m = capture.manifest
    calls = CallIndex.of(capture.calls)
    participants = {p.participant_id: p for p in m.participants}
    spawned_by, links = _relation_links(capture.relations, calls)
    children_of: dict[str | None, list[ParticipantRecord]] = defaultdict(list)
    for p in m.participants:
        parent = p.parent_participant_id if p.parent_participant_id in participants else None
        children_of[parent if p.role == "child" else None].append(p)

    def node(p: ParticipantRecord, seen: frozenset[str]) -> dict[str, Any]:
        call_nodes = {cid: calls.node(cid) for cid in p.call_ids if cid in calls.summaries}
        unknown: list[dict[str, Any]] = []
        for child in children_of.get(p.participant_id, []):
            if child.participant_id in seen:
                continue
            child_node = node(child, seen | {child.participant_id})
            source = spawned_by.get(child.participant_id)
            if source in call_nodes:
                call_nodes[source]["children"].append(child_node)
            else:
                unknown.append(child_node)
        return {
            **participant_summary(p),
            "links": sorted(
                links.get(p.participant_id, []),
                key=lambda link: (
                    _LINK_ORDER.index(link["type"]) if link["type"] in _LINK_ORDER else 99,
                    link["target_sequence"] if link["target_sequence"] is not None else -1,
                ),
            ),
            "calls": list(call_nodes.values()),
            "unknown": unknown,
        }

    roots = [node(p, frozenset({p.participant_id})) for p in children_of.get(None, [])]
    return {
        "attempt_dir": str(capture.paths.root),
        "summary": summary_of(m, calls),
        "roots": roots,
        "unattributed": calls.unattributed,
    }


def _relation_links(
    relations: Iterable[RelationRecord], calls: CallIndex
) -> tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    """From one pass over the relations (a relation at a time): the call that spawned each
    child (an established spawn), and how each child is linked to its parent's calls
    otherwise, for the child's label."""
    spawned_by: dict[str, str] = {}
    links: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel in relations:
        if (
            rel.type == "spawn"
            and rel.status == "established"
            and rel.child_participant_id
            and rel.source_call_id in calls.summaries
        ):
            spawned_by.setdefault(rel.child_participant_id, rel.source_call_id or "")
        if rel.child_participant_id and rel.type != "spawn":
            target = calls.summaries.get(rel.target_call_id or "")
            links[rel.child_participant_id].append(
                {
                    "type": rel.type,
                    "status": rel.status,
                    "target_sequence": target["sequence"] if target else None,
                }
            )
    return spawned_by, links


def summary_of(m: Manifest, calls: CallIndex | TokenCounts) -> dict[str, Any]:
    """The capture's summary line as data (the tree's and the HTML page's)."""
    return {
        "harness": m.harness.name,
        "harness_version": m.harness.version,
        "sample_id": m.sample_id,
        "attempt": m.attempt,
        "execution_status": m.execution_status,
        "capture_status": m.capture_status,
        "lifecycle": m.lifecycle.status if m.lifecycle else None,
        "calls": m.counts.calls,
        "participants": m.counts.participants,
        "relations": m.counts.relations,
        "exportable_calls": m.counts.exportable_calls,
        "unattributed_calls": m.counts.unattributed_calls,
        "ambiguous_calls": m.counts.ambiguous_calls,
        "input_tokens": calls.input_tokens,
        "output_tokens": calls.output_tokens,
        "capture_errors": [e.code for e in m.capture_errors],
    }

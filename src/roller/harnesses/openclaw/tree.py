"""OpenClaw's session tree and which transcript events are each session's own.

Facts relied on (2026.9.6, measured; `store` reads them):
- A participant is a session key: the root (`agent:main:main`, or
  `agent:main:explicit:<id>` with `--session-id`) has no parent; a child
  (`agent:<agentId>:subagent:<uuid>`) names its parent in `session_windows` /
  `session_nodes` (`parent_session_key`). One key may own several session ids (a fork
  child replaced its first, empty window); `session_nodes.current_session_id` is its
  current one. Depth is `entry_json.spawnDepth`, else the length of the parent chain.
- A forked child's transcript starts with a copy of its source session's events, same
  event ids and all (the parent's `responseId` and run id included), before its own
  `[Subagent Task]`. An event of a forked session whose id also occurs in its fork
  source is a copy and is never the child's own. When the source's transcript could not
  be read whole, the child's events cannot be told from copies and none of them counts
  (a `missing_record` problem): its calls stay unattributed, never attributed wrongly.
- Identity: the call's provider response id equals an own assistant event's
  `responseId`; `__openclaw.runId` on that event is the run the call belongs to.

Problem codes: `unknown_reference` (an event of a session id no window names, a parent
key no session has), `disagreement` (the window and the node name different parents),
`missing_record` (a fork source that could not be read whole).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from roller.harnesses.base import NativeEvidence, NativeProblem, ParticipantState
from roller.harnesses.openclaw.store import Event, Node, Store, Window

NATIVE_ROOT = "openclaw"
_STATES: Mapping[str, ParticipantState] = {
    "done": "completed",
    "failed": "failed",
    "killed": "failed",
    "timeout": "failed",
    "running": "running",
}


@dataclass(frozen=True)
class Session:
    """One participant: a session key, its parent, depth, ids and state."""

    key: str
    parent_key: str | None
    depth: int
    session_ids: tuple[str, ...]
    current_id: str
    state: ParticipantState
    db: str

    @property
    def agent(self) -> str | None:
        parts = self.key.split(":")
        return parts[1] if len(parts) > 2 and parts[0] == "agent" else None

    @property
    def evidence(self) -> NativeEvidence:
        return NativeEvidence(f"{NATIVE_ROOT}/{self.db}", f"session {self.key}")


@dataclass(frozen=True)
class Tree:
    sessions: Mapping[str, Session]  # by key
    key_of: Mapping[str, str]  # session id -> key
    own: tuple[Event, ...]  # events that are their session's own, in store order

    def own_assistant(self) -> list[tuple[str, Event]]:
        """(key, event) for every own assistant event that names a response id."""
        return [
            (self.key_of[e.session_id], e)
            for e in self.own
            if e.role == "assistant" and e.response_id is not None
        ]


def _parents(
    windows: list[Window], nodes: Mapping[str, Node], problems: list[NativeProblem]
) -> dict[str, str | None]:
    parents: dict[str, str | None] = {}
    for w in windows:
        node = nodes.get(w.session_key)
        parent = node.parent_key if node is not None else w.parent_key
        if w.parent_key is not None and parent is not None and w.parent_key != parent:
            problems.append(
                NativeProblem(
                    "disagreement",
                    f"window {w.session_id} names parent {w.parent_key}, the node {parent}",
                    f"{NATIVE_ROOT}/{w.db}",
                )
            )
        parents.setdefault(w.session_key, parent if parent is not None else w.parent_key)
    for key, node in nodes.items():
        parents.setdefault(key, node.parent_key)
    return parents


def _depth(key: str, parents: Mapping[str, str | None], nodes: Mapping[str, Node]) -> int:
    node = nodes.get(key)
    if node is not None and node.depth is not None:
        return node.depth
    depth, seen, current = 0, {key}, parents.get(key)
    while current is not None and current not in seen:
        depth, current = depth + 1, parents.get(current)
        seen.add(current or "")
    return depth


def _sessions(store: Store, problems: list[NativeProblem]) -> dict[str, Session]:
    nodes = {n.session_key: n for n in store.nodes}
    windows = list(store.windows)
    parents = _parents(windows, nodes, problems)
    out: dict[str, Session] = {}
    for key, parent in parents.items():
        mine = [w for w in windows if w.session_key == key]
        node = nodes.get(key)
        current = node.current_session_id if node is not None else mine[-1].session_id
        status = next((w.status for w in mine if w.session_id == current), None)
        if parent is not None and parent not in parents:
            problems.append(
                NativeProblem("unknown_reference", f"{key} names parent {parent}, no session")
            )
        out[key] = Session(
            key=key,
            parent_key=parent,
            depth=_depth(key, parents, nodes),
            session_ids=tuple(w.session_id for w in mine) or (current,),
            current_id=current,
            state=_STATES.get(status or "", "unknown"),
            db=(node.db if node is not None else mine[0].db),
        )
    return out


def _own_events(
    store: Store, key_of: Mapping[str, str], problems: list[NativeProblem]
) -> list[Event]:
    """Events that are their session's own: copies from a fork source left out."""
    by_session: dict[str, set[str]] = {}
    for e in store.events:
        if e.id is not None:
            by_session.setdefault(e.session_id, set()).add(e.id)
    sources = {n.current_session_id: n.fork_source for n in store.nodes if n.fork_source}
    for sid, src in sources.items():
        if src in store.unread_sessions:
            message = (
                f"session {sid} was forked from {src}, whose transcript could not be read "
                "whole: its own events cannot be told from the copied ones"
            )
            problems.append(NativeProblem("missing_record", message, f"session {sid}"))
    own: list[Event] = []
    for e in store.events:
        if e.session_id not in key_of:
            problems.append(
                NativeProblem("unknown_reference", "an event of a session no window names", e.where)
            )
            continue
        fork = sources.get(e.session_id)
        if fork is not None and (
            fork in store.unread_sessions or e.id in by_session.get(fork, set())
        ):
            continue
        own.append(e)
    return own


def session_tree(store: Store, problems: list[NativeProblem]) -> Tree:
    sessions = _sessions(store, problems)
    key_of = {sid: s.key for s in sessions.values() for sid in s.session_ids}
    key_of.update({w.session_id: w.session_key for w in store.windows})
    return Tree(sessions, key_of, tuple(_own_events(store, key_of, problems)))

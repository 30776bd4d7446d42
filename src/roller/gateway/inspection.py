"""Sessions as JSON and as trees: what `roller sessions` prints and `/roller/.../tree` serves.

Trees are walked breadth-first from the session asked for, at most `MAX_ANCESTORS` levels
deep, each row visited once: a cycle written behind the store's back (it refuses to write
one) still ends the walk.
"""

from __future__ import annotations

from typing import Any

from roller.gateway.store import MAX_ANCESTORS, Note, RuntimeSession, SessionStore


def _time(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def session_json(row: RuntimeSession) -> dict[str, Any]:
    return {
        "id": row.id,
        "account": row.account,
        "principal": row.principal,
        "harness": row.harness,
        "source_type": row.source_type,
        "source_id": row.source_id,
        "rule": row.rule,
        "role": row.role,
        "parent_session_id": row.parent_session_id,
        "first_seen_at": _time(row.first_seen_at),
        "last_seen_at": _time(row.last_seen_at),
        "closed_at": _time(row.closed_at),
    }


def note_json(note: Note) -> dict[str, Any]:
    return {
        "id": note.id,
        "author_session_id": note.author_session_id,
        "target_session_id": note.target_session_id,
        "body": note.body,
        "allowed_by": note.allowed_by,
        "created_at": _time(note.created_at),
    }


def session_tree(store: SessionStore, root: RuntimeSession) -> dict[str, Any]:
    """`root` and its descendants: `{...session, "calls": n, "children": [...]}`."""
    nodes: dict[str, dict[str, Any]] = {}
    counts = store.call_counts()

    def node(row: RuntimeSession) -> dict[str, Any]:
        made = {**session_json(row), "calls": counts.get(row.id, 0), "children": []}
        nodes[row.id] = made
        return made

    top = node(root)
    level = [root.id]
    for _ in range(MAX_ANCESTORS):
        children = [c for c in store.children(level) if c.id not in nodes]
        if not children:
            break
        for child in children:
            assert child.parent_session_id is not None
            nodes[child.parent_session_id]["children"].append(node(child))
        level = [c.id for c in children]
    return top


def forest(store: SessionStore, account: str | None = None) -> list[dict[str, Any]]:
    """Every session without a parent, as a tree (the whole store, or one account)."""
    return [
        session_tree(store, row) for row in store.sessions(account) if row.parent_session_id is None
    ]

"""Parent links between session rows: set once, never a cycle, every claim audited.

Functions over an open transaction (`Connection`); `repository` calls them. Rules kept:
- A parent is set once and never rewritten: `UPDATE … WHERE parent_session_id IS NULL`.
  Never the row itself (also a CHECK constraint), and never a parent whose ancestor chain
  (walked at most `MAX_ANCESTORS` hops) contains the child: cycles are refused.
- A refused parent leaves nothing behind: every refusal is decided before a parent row
  would be created (a row created now has no ancestors, so it can only be refused as a
  rewrite, which is checked first), so a placeholder row is never left by a refusal.
- Every claim that changes or would change lineage is one `parent_assignment` row:
  `assigned`, or the refusal (`refused_self`, `refused_rewrite`, `refused_cycle`,
  `refused_depth`), with the rule that named the parent and the tape exchange the request
  is (`RequestRef`). A claim the row already satisfies changes nothing and is not one.
- Ancestor walks are bounded and detect cycles; a chain that loops has unknown lineage
  (None), never a partial one that could widen a scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import Connection, insert, select, update

from roller.gateway.derivation import SessionPlan, SourceKey
from roller.gateway.store.models import ParentAssignment, RuntimeSession

MAX_ANCESTORS: Final = 32

REFUSED_SELF: Final = "a session cannot be its own parent"
REFUSED_REWRITE: Final = "the session already has another parent (set once, never rewritten)"
REFUSED_CYCLE: Final = "the parent descends from the session (cycle)"
REFUSED_DEPTH: Final = f"the parent's ancestor chain is longer than {MAX_ANCESTORS}"
# The audit outcome of each refusal.
REFUSAL_OUTCOMES: Final = {
    REFUSED_SELF: "refused_self",
    REFUSED_REWRITE: "refused_rewrite",
    REFUSED_CYCLE: "refused_cycle",
    REFUSED_DEPTH: "refused_depth",
}


@dataclass(frozen=True, slots=True)
class RequestRef:
    """The tape exchange a store operation was made for (the audit's "which request")."""

    tape_dir: str
    exchange_id: str


FindOrCreate = Callable[[SourceKey], str]


def parent_of(conn: Connection, session_id: str) -> str | None:
    return conn.execute(
        select(RuntimeSession.parent_session_id).where(RuntimeSession.id == session_id)
    ).scalar_one_or_none()


def ancestors(
    conn: Connection, session_id: str, *, limit: int = MAX_ANCESTORS
) -> tuple[str, ...] | None:
    """`session_id` itself, then its ancestors nearest first, at most `limit` hops; None
    when the chain loops."""
    chain = [session_id]
    current: str | None = session_id
    for _ in range(limit):
        current = parent_of(conn, current) if current is not None else None
        if current is None:
            break
        if current in chain:
            return None
        chain.append(current)
    return tuple(chain)


def link_parent(
    conn: Connection,
    plan: SessionPlan,
    child_id: str,
    parent_id: str | None,
    create_parent: Callable[[], str],
    audit: Callable[[str | None, str], None],
) -> str | None:
    """Record `plan.parent` (found as `parent_id`, or to be made by `create_parent`) as
    the parent of `child_id` if the rules allow; the refusal reason otherwise (None:
    recorded now or already so). `audit(parent_id, outcome)` records the claim."""
    if plan.parent == plan.own:
        audit(parent_id, REFUSAL_OUTCOMES[REFUSED_SELF])
        return REFUSED_SELF
    current = parent_of(conn, child_id)
    if current is not None:
        if current == parent_id:
            return None
        audit(parent_id, REFUSAL_OUTCOMES[REFUSED_REWRITE])
        return REFUSED_REWRITE
    if parent_id is None:  # a row made now has no ancestors: no cycle, no depth
        parent_id = create_parent()
    else:
        refused = _chain_refusal(conn, child_id, parent_id)
        if refused is not None:
            audit(parent_id, REFUSAL_OUTCOMES[refused])
            return refused
    result = conn.execute(
        update(RuntimeSession)
        .where(RuntimeSession.id == child_id, RuntimeSession.parent_session_id.is_(None))
        .values(parent_session_id=parent_id)
    )
    if result.rowcount == 1:
        audit(parent_id, "assigned")
        return None
    # Someone set it between our read and our update.
    if parent_of(conn, child_id) == parent_id:
        return None
    audit(parent_id, REFUSAL_OUTCOMES[REFUSED_REWRITE])
    return REFUSED_REWRITE


def _chain_refusal(conn: Connection, child_id: str, parent_id: str) -> str | None:
    if child_id == parent_id:
        return REFUSED_SELF
    chain = ancestors(conn, parent_id, limit=MAX_ANCESTORS + 1)
    if chain is None or child_id in chain:
        return REFUSED_CYCLE
    if len(chain) > MAX_ANCESTORS:
        return REFUSED_DEPTH
    return None


def record_assignment(
    conn: Connection,
    plan: SessionPlan,
    child_id: str,
    parent_id: str | None,
    outcome: str,
    request: RequestRef | None,
    now: datetime,
) -> None:
    """One `parent_assignment` row (see the module docstring)."""
    conn.execute(
        insert(ParentAssignment).values(
            id=str(uuid.uuid4()),
            account=plan.client.account,
            principal=plan.client.principal,
            session_id=child_id,
            parent_session_id=parent_id,
            outcome=outcome,
            rule=plan.rule[:40],
            tape_dir=None if request is None else request.tape_dir,
            exchange_id=None if request is None else request.exchange_id,
            created_at=now,
        )
    )

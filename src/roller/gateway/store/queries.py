"""The session store's read-only queries: sessions, calls, notes, lineage and the audit.

`StoreQueries` is the half of `SessionStore` (`roller.gateway.store.repository`) that
never writes: each query runs in its own connection or ORM session on the store's
`engine`, outside any transaction of the writer's, and returns plain values or detached
ORM rows (the routes, export and the tests read them after the session closed).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from roller.gateway.store.lineage import ancestors
from roller.gateway.store.models import Call, Note, ParentAssignment, RuntimeSession


class StoreQueries:
    engine: Engine

    def lineage(self, session_id: str) -> tuple[str, ...] | None:
        """The target's known ancestors, nearest first (at most 32), for the note scope;
        None when it has no parent on record or its chain loops."""
        with self.engine.connect() as conn:
            chain = ancestors(conn, session_id)
        if chain is None or len(chain) < 2:
            return None
        return chain[1:]

    def get(self, session_id: str) -> RuntimeSession | None:
        with Session(self.engine) as orm:
            return orm.get(RuntimeSession, session_id)

    def sessions(self, account: str | None = None) -> list[RuntimeSession]:
        query = select(RuntimeSession).order_by(
            RuntimeSession.first_seen_at, RuntimeSession.source_id
        )
        if account is not None:
            query = query.where(RuntimeSession.account == account)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def children(self, session_ids: Sequence[str]) -> list[RuntimeSession]:
        if not session_ids:
            return []
        query = (
            select(RuntimeSession)
            .where(RuntimeSession.parent_session_id.in_(list(session_ids)))
            .order_by(RuntimeSession.first_seen_at, RuntimeSession.source_id)
        )
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def calls(self, session_id: str | None = None) -> list[Call]:
        query = select(Call).order_by(Call.started_at, Call.exchange_id)
        if session_id is not None:
            query = query.where(Call.session_id == session_id)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def call_counts(self) -> dict[str, int]:
        """Calls per session id."""
        query = (
            select(Call.session_id, func.count())
            .where(Call.session_id.is_not(None))
            .group_by(Call.session_id)
        )
        with self.engine.connect() as conn:
            return {str(sid): int(n) for sid, n in conn.execute(query)}

    def recorded_exchanges(self, tape_dir: str) -> set[str]:
        """The exchange ids of `tape_dir` that have a call row."""
        query = select(Call.exchange_id).where(Call.tape_dir == tape_dir)
        with self.engine.connect() as conn:
            return {str(x) for x in conn.execute(query).scalars()}

    def parent_assignments(self) -> list[ParentAssignment]:
        """The lineage audit, oldest first."""
        query = select(ParentAssignment).order_by(ParentAssignment.created_at, ParentAssignment.id)
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

    def notes_for(self, target_id: str) -> list[Note]:
        query = (
            select(Note)
            .where(Note.target_session_id == target_id)
            .order_by(Note.created_at, Note.id)
        )
        with Session(self.engine) as orm:
            return list(orm.scalars(query))

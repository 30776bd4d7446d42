"""Session rows by source key: find or create one, touch it, close it; the principal's
source-keyed generations. Functions over a connection inside the caller's transaction
(`roller.gateway.store.repository.SessionStore`).

Rules kept here:
- Exactly one row per source key, under any concurrency: a row is created with
  `INSERT … ON CONFLICT DO NOTHING` on (account, principal, source_type, source_id) and
  then selected, so concurrent first turns, or a child arriving before its parent's own
  turn, all end on the same row. A parent is created or found by its source key exactly
  as the parent's own turn would.
- `last_seen_at` only moves forward (`touch_last_seen`); `closed_at` is set once
  (`close`).
- Source-keyed rows (no identity on the wire) are per (principal, harness) and closed
  after the inactivity window without a request; a closed row is never reopened: the
  next request opens the next generation (`source_row`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from roller.gateway.config import Client
from roller.gateway.derivation import SourceKey, source_key_for_principal
from roller.gateway.store.engine import StoreError
from roller.gateway.store.ids import new_id
from roller.gateway.store.models import RuntimeSession


def find_or_create(
    conn: Connection,
    client: Client,
    key: SourceKey,
    rule: str,
    now: datetime,
    *,
    touch: bool,
) -> str:
    found = select_key(conn, client, key)
    if found is None:
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        statement = (
            dialect_insert(RuntimeSession)
            .values(
                id=new_id(),
                account=client.account,
                principal=client.principal,
                harness=client.harness,
                source_type=key.source_type,
                source_id=key.source_id,
                rule=rule,
                role=None,
                parent_session_id=None,
                first_seen_at=now,
                last_seen_at=now,
                closed_at=None,
            )
            .on_conflict_do_nothing(
                index_elements=["account", "principal", "source_type", "source_id"]
            )
        )
        conn.execute(statement)
        found = select_key(conn, client, key)
        if found is None:  # cannot happen: the insert or its conflict left a row
            raise StoreError(f"session row for {key.source_type} vanished")
        return found
    if touch:
        touch_last_seen(conn, found, now)
    return found


def select_key(conn: Connection, client: Client, key: SourceKey) -> str | None:
    return conn.execute(
        select(RuntimeSession.id).where(
            RuntimeSession.account == client.account,
            RuntimeSession.principal == client.principal,
            RuntimeSession.source_type == key.source_type,
            RuntimeSession.source_id == key.source_id,
        )
    ).scalar_one_or_none()


def touch_last_seen(conn: Connection, session_id: str, now: datetime) -> None:
    conn.execute(
        update(RuntimeSession)
        .where(RuntimeSession.id == session_id, RuntimeSession.last_seen_at < now)
        .values(last_seen_at=now)
    )


def latest_source(client: Client) -> Any:
    """The principal's newest source-keyed row of its declared harness (a query)."""
    prefix = f"{client.harness}#"
    return (
        select(
            RuntimeSession.id,
            RuntimeSession.source_id,
            RuntimeSession.last_seen_at,
            RuntimeSession.closed_at,
        )
        .where(
            RuntimeSession.account == client.account,
            RuntimeSession.principal == client.principal,
            RuntimeSession.source_type == "source",
            RuntimeSession.source_id.startswith(prefix, autoescape=True),
        )
        .order_by(RuntimeSession.first_seen_at.desc(), RuntimeSession.source_id.desc())
        .limit(1)
    )


def source_row(
    conn: Connection, client: Client, now: datetime, inactivity: timedelta
) -> tuple[str, SourceKey]:
    prefix = f"{client.harness}#"
    query = latest_source(client)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    latest = conn.execute(query).one_or_none()
    generation = 1
    if latest is not None:
        generation = int(latest.source_id[len(prefix) :]) + 1
        if latest.closed_at is None:
            if latest.last_seen_at >= now - inactivity:
                touch_last_seen(conn, latest.id, now)
                return latest.id, SourceKey("source", latest.source_id)
            close(conn, latest.id, latest.last_seen_at + inactivity)
    key = source_key_for_principal(client, generation)
    return find_or_create(conn, client, key, "source", now, touch=True), key


def close(conn: Connection, session_id: str, when: datetime) -> None:
    conn.execute(
        update(RuntimeSession)
        .where(RuntimeSession.id == session_id, RuntimeSession.closed_at.is_(None))
        .values(closed_at=when)
    )

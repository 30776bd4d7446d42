"""The session store's tables, as SQLAlchemy 2 declarative models.

The alembic migrations under `roller/gateway/migrations/versions/` create exactly these
tables (a test compares them); change both together, with a new revision.

Rules the schema itself keeps (so no code path can break them):
- `runtime_session.parent_session_id` is a nullable self-reference that is never the row
  itself (CHECK `ck_runtime_session_not_own_parent`); the repository sets it once, only
  while it is NULL, and refuses cycles.
- A session is found by its source key: unique (account, principal, source_type,
  source_id). The principal is part of the key because identity keys are unique only
  within one principal (docs/identity.md): another principal of the same account
  sending the same session id gets a row of its own, never someone else's session.
- Times are stored in UTC (`UTCDateTime`), on SQLite as on PostgreSQL.
- `call` rows point at the tape exchange that holds the bytes; the database never holds
  a request or response body, and never a credential. `call.flags` says what of a row
  had to be stored otherwise than the request said (`roller.gateway.store.values`).
- Every parent a request claimed is a `parent_assignment` row (assigned, or refused and
  why), naming the tape exchange it came from: lineage changes are audited.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime in, an aware UTC datetime out, whatever the backend keeps."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class RuntimeSession(Base):
    __tablename__ = "runtime_session"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account: Mapped[str] = mapped_column(String(100))
    principal: Mapped[str] = mapped_column(String(100))
    harness: Mapped[str] = mapped_column(String(40))
    # "roller" (X-Roller-Session-Id space), a harness name (its native and body ids), or
    # "source" (no identity on the wire: keyed on the principal, closed after inactivity).
    source_type: Mapped[str] = mapped_column(String(40))
    source_id: Mapped[str] = mapped_column(String(250))
    # The identity rule that first named this row (roller.identity rule, or "source").
    rule: Mapped[str] = mapped_column(String(40))
    # "root" / "child" as the wire first said; NULL when no request of its own said.
    role: Mapped[str | None] = mapped_column(String(10), nullable=True)
    parent_session_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT"), nullable=True
    )
    first_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    __table_args__ = (
        UniqueConstraint("account", "principal", "source_type", "source_id"),
        CheckConstraint(
            "parent_session_id IS NULL OR parent_session_id <> id", name="not_own_parent"
        ),
        CheckConstraint("role IS NULL OR role IN ('root', 'child')", name="role"),
        Index(None, "parent_session_id"),
        Index(None, "account", "last_seen_at"),
    )


class Call(Base):
    __tablename__ = "call"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tape_dir: Mapped[str] = mapped_column(Text)
    exchange_id: Mapped[str] = mapped_column(String(100))
    session_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT"), nullable=True
    )
    # NULL for a request whose token was unknown: it belongs to no one.
    account: Mapped[str | None] = mapped_column(String(100), nullable=True)
    principal: Mapped[str | None] = mapped_column(String(100), nullable=True)
    # Any HTTP token: `UNSUBSCRIBE` is 11 (revision 0003 widened it from 10; a longer one
    # is cut and flagged, `roller.gateway.store.values`).
    method: Mapped[str] = mapped_column(String(40))
    path: Mapped[str] = mapped_column(Text)
    family: Mapped[str | None] = mapped_column(String(20), nullable=True)
    protocol: Mapped[str | None] = mapped_column(String(40), nullable=True)
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # True when the wire named the session but not the participant (e.g. a subagent whose
    # own id was rejected): the call is in its session's row, not attributed further.
    participant_unknown: Mapped[bool] = mapped_column(default=False)
    identity: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    outcome: Mapped[str] = mapped_column(String(40))
    client_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    upstream_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The status rulebook's (`roller.capture.statuses`), as finalize derives them from the
    # same exchange: how it ended at the proxy and whether the response reached its
    # terminal event. NULL response capture: a row written before revision 0002.
    execution_status: Mapped[str] = mapped_column(String(20))
    response_capture_status: Mapped[str | None] = mapped_column(String(20), nullable=True)
    error_code: Mapped[str | None] = mapped_column(String(60), nullable=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # What was stored otherwise than sent: `escaped:<column>`, `truncated:<column>`,
    # `response_over_limit` (statuses judged without the body). NULL: nothing (or a row
    # written before revision 0003).
    flags: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)

    __table_args__ = (
        UniqueConstraint("tape_dir", "exchange_id"),
        Index(None, "session_id"),
    )


class ParentAssignment(Base):
    """One parent link a model request claimed: recorded (`assigned`) or refused."""

    __tablename__ = "parent_assignment"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account: Mapped[str] = mapped_column(String(100))
    principal: Mapped[str] = mapped_column(String(100))
    session_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT")
    )
    # The parent recorded; NULL when refused before a parent row existed (no placeholder).
    parent_session_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT"), nullable=True
    )
    # "assigned", or "refused_self" / "refused_rewrite" / "refused_cycle" / "refused_depth".
    outcome: Mapped[str] = mapped_column(String(40))
    rule: Mapped[str] = mapped_column(String(40))  # the identity rule that named the parent
    tape_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    exchange_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index(None, "session_id"),)


class Note(Base):
    __tablename__ = "note"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account: Mapped[str] = mapped_column(String(100))
    author_session_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT")
    )
    target_session_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("runtime_session.id", ondelete="RESTRICT")
    )
    body: Mapped[str] = mapped_column(Text)
    # Why it was allowed: "descendant" or "grant:<scope>".
    allowed_by: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index(None, "target_session_id", "created_at"),)

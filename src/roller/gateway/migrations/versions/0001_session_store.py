"""Session store: runtime_session, call, note.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from roller.gateway.store.models import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runtime_session",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("account", sa.String(100), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("harness", sa.String(40), nullable=False),
        sa.Column("source_type", sa.String(40), nullable=False),
        sa.Column("source_id", sa.String(250), nullable=False),
        sa.Column("rule", sa.String(40), nullable=False),
        sa.Column("role", sa.String(10), nullable=True),
        sa.Column("parent_session_id", sa.String(36), nullable=True),
        sa.Column("first_seen_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("closed_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runtime_session")),
        sa.ForeignKeyConstraint(
            ["parent_session_id"],
            ["runtime_session.id"],
            name=op.f("fk_runtime_session_parent_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
        sa.UniqueConstraint(
            "account",
            "principal",
            "source_type",
            "source_id",
            name=op.f("uq_runtime_session_account_principal_source_type_source_id"),
        ),
        sa.CheckConstraint(
            "parent_session_id IS NULL OR parent_session_id <> id",
            name=op.f("ck_runtime_session_not_own_parent"),
        ),
        sa.CheckConstraint(
            "role IS NULL OR role IN ('root', 'child')", name=op.f("ck_runtime_session_role")
        ),
    )
    op.create_index(
        op.f("ix_runtime_session_parent_session_id"), "runtime_session", ["parent_session_id"]
    )
    op.create_index(
        op.f("ix_runtime_session_account_last_seen_at"),
        "runtime_session",
        ["account", "last_seen_at"],
    )
    op.create_table(
        "call",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("tape_dir", sa.Text(), nullable=False),
        sa.Column("exchange_id", sa.String(100), nullable=False),
        sa.Column("session_id", sa.String(36), nullable=True),
        sa.Column("account", sa.String(100), nullable=True),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("family", sa.String(20), nullable=True),
        sa.Column("protocol", sa.String(40), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("participant_unknown", sa.Boolean(), nullable=False),
        sa.Column("identity", sa.JSON(), nullable=True),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("client_status", sa.Integer(), nullable=True),
        sa.Column("upstream_status", sa.Integer(), nullable=True),
        sa.Column("execution_status", sa.String(20), nullable=False),
        sa.Column("error_code", sa.String(60), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["runtime_session.id"],
            name=op.f("fk_call_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
        sa.UniqueConstraint("tape_dir", "exchange_id", name=op.f("uq_call_tape_dir_exchange_id")),
    )
    op.create_index(op.f("ix_call_session_id"), "call", ["session_id"])
    op.create_table(
        "note",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("account", sa.String(100), nullable=False),
        sa.Column("author_session_id", sa.String(36), nullable=False),
        sa.Column("target_session_id", sa.String(36), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("allowed_by", sa.String(40), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_note")),
        sa.ForeignKeyConstraint(
            ["author_session_id"],
            ["runtime_session.id"],
            name=op.f("fk_note_author_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["target_session_id"],
            ["runtime_session.id"],
            name=op.f("fk_note_target_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
    )
    op.create_index(
        op.f("ix_note_target_session_id_created_at"), "note", ["target_session_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_table("note")
    op.drop_table("call")
    op.drop_table("runtime_session")

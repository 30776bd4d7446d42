"""parent_assignment (the audit of every parent link claimed), call.flags, call.method wider.

Every parent a request set, or tried to set and was refused, is one `parent_assignment`
row naming the tape exchange it came from. A call row notes in `flags` what of it had to
be stored differently from what the request said (`escaped:<column>`,
`truncated:<column>`, `response_over_limit`). Existing rows keep NULL flags.
`call.method` grows from 10 to 40 characters: a method such as `UNSUBSCRIBE` (11) lost
its row on PostgreSQL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from roller.gateway.store.models import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("call") as batch:  # SQLite: a batch rebuilds the table
        batch.add_column(sa.Column("flags", sa.JSON(), nullable=True))
        batch.alter_column(
            "method", existing_type=sa.String(10), type_=sa.String(40), existing_nullable=False
        )
    op.create_table(
        "parent_assignment",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("account", sa.String(100), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("session_id", sa.String(36), nullable=False),
        sa.Column("parent_session_id", sa.String(36), nullable=True),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("rule", sa.String(40), nullable=False),
        sa.Column("tape_dir", sa.Text(), nullable=True),
        sa.Column("exchange_id", sa.String(100), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_parent_assignment")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["runtime_session.id"],
            name=op.f("fk_parent_assignment_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["parent_session_id"],
            ["runtime_session.id"],
            name=op.f("fk_parent_assignment_parent_session_id_runtime_session"),
            ondelete="RESTRICT",
        ),
    )
    op.create_index(op.f("ix_parent_assignment_session_id"), "parent_assignment", ["session_id"])


def downgrade() -> None:
    op.drop_table("parent_assignment")
    with op.batch_alter_table("call") as batch:
        batch.alter_column(
            "method", existing_type=sa.String(40), type_=sa.String(10), existing_nullable=False
        )
        batch.drop_column("flags")

"""call.response_capture_status: the rulebook's second status for a call row.

The gateway now derives a call row's statuses with the same rules as finalize
(`roller.capture.statuses`), which give the response capture status too. Rows written
before this revision have none (NULL): their exchanges are still on the tape.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("call", sa.Column("response_capture_status", sa.String(20), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call") as batch:
        batch.drop_column("response_capture_status")

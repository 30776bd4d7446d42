"""Alembic environment: run the revisions on the connection the caller hands over.

`roller.gateway.store.engine.migrate` passes an open connection in
`config.attributes["connection"]` (inside its transaction, under a lock on PostgreSQL);
the developer CLI path (`alembic -c alembic.ini ...`) builds an engine from the ini URL.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from roller.gateway.store.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite alters tables by copying them
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    with create_engine(url).begin() as conn:
        _run(conn)

"""Opening the session store: engines for SQLite and PostgreSQL, and migrations.

Rules this module keeps:
- SQLite is a file, in WAL mode, with foreign keys on and every transaction begun
  `IMMEDIATE`: a deferred SQLite transaction that reads and then writes fails at once
  with "database is locked" when another writer got there first (no busy wait), which is
  exactly the child-before-parent race; `IMMEDIATE` takes the write lock up front and
  waits for it (`busy_timeout`), so concurrent resolutions serialise instead of failing.
- PostgreSQL runs at READ COMMITTED; uniqueness races are settled by
  `INSERT … ON CONFLICT DO NOTHING` and a re-select (`roller.gateway.store.repository`).
- Migrations run to head on open, under a PostgreSQL advisory lock so two gateways
  starting together do not race each other's DDL.
- Database errors become `StoreError` (a RollerError) at this boundary with the URL's
  password hidden; SQLAlchemy's own messages never leak a credential into a log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from roller.errors import RollerError

MIGRATIONS_DIR: Final = Path(__file__).resolve().parent.parent / "migrations"
_MIGRATION_LOCK: Final = 0x726F6C6C  # "roll": any constant shared by every gateway
SQLITE_BUSY_TIMEOUT_S: Final = 30.0
# Every transaction's commit is synced, a resolution's first of all (a session row is not
# on the tape); the background writer's batches relax it (`roller.gateway.store.batch`).
SQLITE_SYNCHRONOUS: Final = "FULL"


class StoreError(RollerError):
    """The session store cannot be opened, migrated or written."""


def safe_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def open_engine(url: str, *, migrate_to_head: bool = True) -> Engine:
    """An engine for `url` (`sqlite:///PATH` or `postgresql+psycopg://…`), migrated."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(f"not a database URL: {safe_url(url)}") from None
    backend = parsed.get_backend_name()
    try:
        if backend == "sqlite":
            engine = _sqlite_engine(url, parsed.database)
        elif backend == "postgresql":
            engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
        else:
            raise StoreError(f"unsupported database {backend!r}: use SQLite or PostgreSQL")
        if migrate_to_head:
            migrate(engine)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {safe_url(url)}: {_reason(exc)}") from None
    except ModuleNotFoundError as exc:
        raise StoreError(
            f"cannot open {safe_url(url)}: missing driver {exc.name}"
            " (pip install 'roller[postgres]')"
        ) from None
    return engine


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]


def _sqlite_engine(url: str, database: str | None) -> Engine:
    if not database or database == ":memory:":
        raise StoreError("the session store needs a SQLite file, not an in-memory database")
    Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide where transactions begin (see below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def migrate(engine: Engine) -> None:
    """Run every migration up to head, once, whoever else is starting."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")

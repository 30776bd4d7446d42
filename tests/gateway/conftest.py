"""Gateway test fixtures: a session store on SQLite and on PostgreSQL for every store test.

PostgreSQL comes from `ROLLER_TEST_POSTGRES_URL` (scripts/test starts a server through
scripts/lib/postgres.sh). Without it the PostgreSQL cases FAIL with a message saying so:
they never skip. Each test gets a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from roller.gateway.config import Client
from roller.gateway.store import SessionStore, open_engine

POSTGRES_ENV = "ROLLER_TEST_POSTGRES_URL"
BACKENDS = [pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.postgres)]


def postgres_base_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.fail(
            f"{POSTGRES_ENV} is not set: the gateway's PostgreSQL tests need a server. "
            "Run them through scripts/test (it starts one with scripts/lib/postgres.sh), "
            "or source scripts/lib/postgres.sh first."
        )
    return url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gateway.db'}"
        return
    base = postgres_base_url()
    schema = "t_" + secrets.token_hex(8)
    admin = create_engine(base)
    try:
        with admin.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        joiner = "&" if "?" in base else "?"
        yield f"{base}{joiner}options=-csearch_path%3D{schema}"
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    finally:
        admin.dispose()


@pytest.fixture
def store(db_url: str) -> Iterator[SessionStore]:
    engine = open_engine(db_url)
    try:
        yield SessionStore(engine, inactivity_seconds=60)
    finally:
        engine.dispose()


ALICE_CC = Client("a" * 64, "alice", "acme", "claude-code")
ALICE_OC = Client("b" * 64, "alice", "acme", "opencode")
BOB_CC = Client("c" * 64, "bob", "acme", "claude-code")
ALICE_GEMINI = Client("d" * 64, "alice", "acme", "gemini-cli")
EVE_OTHER_ACCOUNT = Client("e" * 64, "eve", "globex", "claude-code")

"""Gateway test fixtures: a session store on SQLite and on PostgreSQL for every store test.

PostgreSQL comes from `ROLLER_TEST_POSTGRES_URL` (scripts/test starts a server through
scripts/lib/postgres.sh). Without it the PostgreSQL cases FAIL with a message saying so:
they never skip. Each test gets a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from roller.capture.tape import TapeReadResult, read_tape
from roller.gateway.config import Client, parse_config
from roller.gateway.policy import GatewayPolicy
from roller.gateway.server import Gateway
from roller.gateway.store import RuntimeSession, SessionStore, open_engine
from roller.gateway.tokens import new_token, token_sha256
from tests.support.servers import BackgroundLoop

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
    store = SessionStore(open_engine(db_url), inactivity_seconds=60)
    try:
        yield store
    finally:
        store.close()


def one_client_policy(store: Any, tmp_path: Path) -> tuple[GatewayPolicy, str]:
    """A gateway policy over `store` with one Claude Code client (alice at acme) and an
    Anthropic upstream, and that client's token."""
    token = new_token()
    raw = {
        "upstreams": {"anthropic": {"url": "http://127.0.0.1:9"}},
        "clients": [
            {"token_sha256": token_sha256(token), "principal": "alice", "account": "acme",
             "harness": "claude-code"},
        ],
    }  # fmt: skip
    policy = GatewayPolicy(
        parse_config(raw, base=tmp_path),
        store,
        upstreams={"anthropic": "http://127.0.0.1:9"},
        keys={"anthropic": "sk-real"},
        tape_dir=tmp_path / "tape",
    )
    return policy, token


ALICE_CC = Client("a" * 64, "alice", "acme", "claude-code")
ALICE_OC = Client("b" * 64, "alice", "acme", "opencode")
BOB_CC = Client("c" * 64, "bob", "acme", "claude-code")
ALICE_GEMINI = Client("d" * 64, "alice", "acme", "gemini-cli")
EVE_OTHER_ACCOUNT = Client("e" * 64, "eve", "globex", "claude-code")


# -- a running gateway ---------------------------------------------------------------------


@dataclass
class RunningGateway:
    loop: BackgroundLoop
    gateway: Gateway
    url: str
    tokens: dict[str, str]  # name -> token
    tape_dir: Path

    @property
    def store(self) -> SessionStore:
        assert self.gateway.store is not None
        return self.gateway.store

    def idle(self) -> None:
        assert self.loop.run(self.gateway.idle(10)), "gateway never went idle"

    def tape(self) -> TapeReadResult:
        self.idle()
        return read_tape(self.tape_dir)

    def rows(self) -> list[RuntimeSession]:
        self.idle()
        return self.store.sessions()

    def row(self, source_id: str) -> RuntimeSession:
        (found,) = [r for r in self.rows() if r.source_id == source_id]
        return found


GatewayFactory = Callable[..., RunningGateway]

# Clients every gateway test gets: name -> (principal, account, harness).
CLIENTS = {
    "cc": ("alice", "acme", "claude-code"),
    "oc": ("alice", "acme", "opencode"),
    "codex": ("alice", "acme", "codex"),
    "gemini": ("alice", "acme", "gemini-cli"),
    "generic": ("carol", "acme", "generic"),
    "bob": ("bob", "acme", "claude-code"),
    "eve": ("eve", "globex", "claude-code"),
    "granted": ("gina", "granted-co", "opencode"),
    "cc_roller": ("alice", "acme", "claude-code"),  # a framework sending x-roller-* itself
}
# Clients configured to send roller's own identity headers (`roller_headers = true`).
ROLLER_HEADER_CLIENTS = frozenset({"cc_roller"})


@pytest.fixture
def start_gateway(bg_loop: BackgroundLoop, db_url: str, tmp_path: Path) -> Iterator[GatewayFactory]:
    started: list[Gateway] = []

    def start(
        upstreams: dict[str, dict[str, str]] | None = None,
        environ: dict[str, str] | None = None,
        **settings: Any,
    ) -> RunningGateway:
        tokens = {name: new_token() for name in CLIENTS}
        raw: dict[str, Any] = {
            "upstreams": upstreams
            or {
                "anthropic": {"url": "mock:spawn-one"},
                "openai": {"url": "mock:spawn-one"},
                "gemini": {"url": "mock:spawn-one"},
            },
            "clients": [
                {
                    "token_sha256": token_sha256(tokens[name]),
                    "principal": principal,
                    "account": account,
                    "harness": harness,
                    **({"roller_headers": True} if name in ROLLER_HEADER_CLIENTS else {}),
                }
                for name, (principal, account, harness) in CLIENTS.items()
            ],
            "grants": [{"account": "granted-co", "scope": "account"}],
            "gateway": settings,
        }
        config = parse_config(raw, base=tmp_path)
        tape_dir = tmp_path / f"tape{len(started)}"
        gateway = Gateway(config, db_url=db_url, tape_dir=tape_dir, environ=environ or {})
        url = bg_loop.run(gateway.start())
        started.append(gateway)
        return RunningGateway(bg_loop, gateway, url, tokens, tape_dir)

    yield start
    for gateway in started:
        bg_loop.run(gateway.stop(grace=1.0))

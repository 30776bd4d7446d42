"""A `roller gateway` for the soak suite: its config file, tokens and secrets.

The gateway forwards to the fault upstream (`tests.soak.upstream`) with a real key read
from the environment, and knows `TOKENS` OpenCode credentials; every client of the load
sends one of them and its own `x-session-id`. The secrets that must never reach disk or
a log: the tokens, the upstream key, a key in `x-key` and one in `?k=` (both configured
as redacted names).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from roller.gateway.store import SessionStore, open_engine
from roller.gateway.tokens import new_token, token_sha256
from tests.soak.processes import ROLLER, Served, serve

TOKENS: Final = 4
KEY_ENV: Final = "SOAK_UPSTREAM_KEY"


@dataclass(frozen=True)
class GatewaySetup:
    config: Path
    db: Path
    tape: Path
    tokens: tuple[str, ...]
    key: str
    x_key: str
    query_key: str

    @property
    def secrets(self) -> tuple[str, ...]:
        return (*self.tokens, self.key, self.x_key, self.query_key)

    def start(self, log: Path) -> Served:
        argv = [ROLLER, "gateway", "--config", str(self.config), "--shutdown-grace", "10"]
        return serve(argv, log, env={KEY_ENV: self.key})

    def store(self) -> SessionStore:
        return SessionStore(open_engine(f"sqlite:///{self.db}"))

    def headers(self, n: int) -> dict[str, str]:
        """What client `n` sends: a token and its own session."""
        token = self.tokens[n % len(self.tokens)]
        return {"authorization": f"Bearer {token}", "x-key": self.x_key, "x-session-id": f"s{n}"}


def upstream_key() -> str:
    return f"sk-soak-{secrets.token_hex(12)}"


def write_setup(directory: Path, upstream_url: str, key: str) -> GatewaySetup:
    tokens = tuple(new_token() for _ in range(TOKENS))
    clients = "".join(
        f'[[clients]]\nprincipal = "p{i}"\naccount = "soak"\nharness = "opencode"\n'
        f'token_sha256 = "{token_sha256(t)}"\n\n'
        for i, t in enumerate(tokens)
    )
    config = directory / "gateway.toml"
    config.write_text(
        '[gateway]\nlisten = "127.0.0.1:0"\ndb = "gateway.db"\ntape = "tape"\n'
        'redact_headers = ["x-key"]\nredact_query = ["k"]\n\n'
        f'[upstreams]\nopenai = {{ url = "{upstream_url}", key_env = "{KEY_ENV}" }}\n\n' + clients
    )
    return GatewaySetup(
        config=config,
        db=directory / "gateway.db",
        tape=directory / "tape",
        tokens=tokens,
        key=key,
        x_key=f"xk-soak-{secrets.token_hex(12)}",
        query_key=f"qk-soak-{secrets.token_hex(12)}",
    )

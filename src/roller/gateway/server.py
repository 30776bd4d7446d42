"""The gateway as a running server: store, mock upstreams, the proxy core, the routes.

`Gateway(config, db_url=..., tape_dir=..., host=..., port=...)`; `await start()` returns the
base URL, `await stop()` drains exchanges in flight (their `call` rows are written by the
end hook before the store closes) and closes everything it started.

Order of start, and why:
1. the real upstream keys are read from the environment first (a missing one fails
   before anything listens);
2. the store is opened and migrated (a bad database URL fails before anything listens);
3. each `mock:SCENARIO` upstream starts the built-in mock model on 127.0.0.1:0;
4. the proxy core gets the gateway policy and end hook, the `/roller/` routes are added
   to its application (aiohttp resolves the most specific path first, so they win over
   the proxy's catch-all; the policy also refuses to forward any `/roller/` path), and it
   starts listening;
5. a sweeper closes idle source-keyed sessions on a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from roller.errors import ConfigError
from roller.gateway.config import GatewayConfig, resolve_upstream_keys
from roller.gateway.policy import GatewayPolicy
from roller.gateway.routes import GatewayRoutes
from roller.gateway.store import SessionStore, open_engine
from roller.mock import MockModel, RunningMock, load_scenario
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from roller.wire.endpoints import Family

log = logging.getLogger("roller.gateway")


class Gateway:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        db_url: str,
        tape_dir: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        environ: Mapping[str, str] | None = None,
        sweep_interval: float | None = None,
    ) -> None:
        self.config = config
        self.db_url = db_url
        self.tape_dir = tape_dir
        self.host = host
        self.port = port
        self.environ = environ
        self.sweep_interval = sweep_interval or min(60.0, config.inactivity_seconds / 2)
        self.store: SessionStore | None = None
        self.policy: GatewayPolicy | None = None
        self.proxy: ProxyServer | None = None
        self.mocks: dict[Family, RunningMock] = {}
        self.url: str | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> str:
        keys = resolve_upstream_keys(
            self.config, None if self.environ is None else dict(self.environ)
        )
        engine = await asyncio.to_thread(open_engine, self.db_url)
        self.store = SessionStore(engine, inactivity_seconds=self.config.inactivity_seconds)
        try:
            upstreams = await self._start_upstreams()
            self.policy = GatewayPolicy(
                self.config, self.store, upstreams=upstreams, keys=keys, tape_dir=self.tape_dir
            )
            self.proxy = ProxyServer(
                ProxyConfig(
                    tape_dir=self.tape_dir,
                    upstreams=Upstreams(),
                    host=self.host,
                    port=self.port,
                    policy=self.policy,
                    on_exchange_end=self.policy.on_exchange_end,
                )
            )
            GatewayRoutes(self.policy).add_to(self.proxy.app())
            self.url = await self.proxy.start()
        except BaseException:
            await self.stop()
            raise
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        return self.url

    async def _start_upstreams(self) -> dict[Family, str]:
        urls: dict[Family, str] = {}
        for family, upstream in self.config.upstreams.items():
            if upstream.mock is None:
                assert upstream.url is not None
                urls[family] = upstream.url
                continue
            try:
                scenario = load_scenario(upstream.mock)
            except ConfigError as exc:
                raise ConfigError(f"[upstreams] {family}: {exc}") from None
            running = await MockModel(scenario).serve("127.0.0.1", 0)
            self.mocks[family] = running
            urls[family] = running.url
        return urls

    async def _sweep(self) -> None:
        store = self.store
        assert store is not None
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await store.run(store.close_inactive, datetime.now(UTC))
            except Exception:  # a store hiccup must not end the sweeper; it is logged
                log.exception("closing inactive sessions failed")

    async def stop(self, grace: float = 5.0) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        if self.proxy is not None:
            await self.proxy.stop(grace=grace)
            self.proxy = None
        for mock in self.mocks.values():
            await mock.close()
        self.mocks = {}
        if self.store is not None:
            await asyncio.to_thread(self.store.close)
            self.store = None

    @property
    def tape_errors(self) -> list[str]:
        return [] if self.proxy is None else list(self.proxy.tape_errors)

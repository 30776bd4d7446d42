"""The gateway as a running server: store, mock upstreams, the proxy core, the routes.

`Gateway(config, db_url=..., tape_dir=..., host=..., port=...)`; `await start()` returns the
base URL, `await stop()` drains exchanges in flight (their `call` rows are written by the
end hook before the store closes) and closes everything it started.

Exposure: a gateway holds real upstream keys, so it listens on a non-loopback address
only with TLS (`tls=(cert, key)`) or when told `allow_insecure_remote`; anything else is
a `UsageError` raised on construction, before anything is opened.

Order of start, and why:
1. the real upstream keys are read from the environment first (a missing one fails
   before anything listens);
2. the store is opened and migrated (a bad database URL fails before anything listens);
3. a previous run that did not stop cleanly gets its rows (`roller.gateway.recovery`),
   and the tape directory is marked as in use by this run;
4. each `mock:SCENARIO` upstream starts the built-in mock model on 127.0.0.1:0;
5. the proxy core gets the gateway policy and end hook (and the body limit and redacted
   names of the configuration) and the `/roller/` routes as its local routes, asked
   before anything is forwarded (`roller.gateway.routes`; the policy also refuses to
   forward any `/roller/` path), and it starts listening;
6. a sweeper closes idle source-keyed sessions on a timer.
A clean stop drains exchanges in flight, then the background writer's queue
(`roller.gateway.writer`), closes the store and removes the run mark — unless some call
row could not be written: then the mark stays and the next start reconciles those rows
from the tape.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from roller.errors import ConfigError, UsageError
from roller.gateway.config import GatewayConfig, resolve_upstream_keys
from roller.gateway.policy import GatewayPolicy
from roller.gateway.recovery import Recovery, mark_running, mark_stopped, recover
from roller.gateway.routes import GatewayRoutes
from roller.gateway.store import SessionStore, open_engine
from roller.mock import MockModel, RunningMock, load_scenario
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from roller.proxy.server import is_loopback
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
        tls: tuple[Path, Path] | None = None,
        allow_insecure_remote: bool = False,
    ) -> None:
        check_exposure(host, tls=tls is not None, allow_insecure_remote=allow_insecure_remote)
        self.server_ssl = None if tls is None else server_context(*tls)
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
        self.recovery = Recovery(crashed=False)
        self.hook_errors = 0  # of proxies already stopped
        self._tape_errors: list[str] = []  # of proxies already stopped
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> str:
        keys = resolve_upstream_keys(
            self.config, None if self.environ is None else dict(self.environ)
        )
        engine = await asyncio.to_thread(open_engine, self.db_url)
        self.store = SessionStore(engine, inactivity_seconds=self.config.inactivity_seconds)
        try:
            self.recovery = await asyncio.to_thread(recover, self.store, self.tape_dir)
            await asyncio.to_thread(mark_running, self.tape_dir)
            upstreams = await self._start_upstreams()
            self.policy = GatewayPolicy(
                self.config, self.store, upstreams=upstreams, keys=keys, tape_dir=self.tape_dir
            )
            routes = GatewayRoutes(self.policy)
            self.proxy = ProxyServer(
                ProxyConfig(
                    tape_dir=self.tape_dir,
                    upstreams=Upstreams(),
                    host=self.host,
                    port=self.port,
                    policy=self.policy,
                    on_exchange_end=self.policy.on_exchange_end,
                    max_request_body=self.config.max_request_body,
                    redactor=self.policy.redactor,
                    server_ssl=self.server_ssl,
                    local=routes,
                )
            )
            self.policy.rows.on_row_error = self.proxy.note_hook_error
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
            # The rows of the last exchanges are committed before the tape closes.
            await self.proxy.stop(grace=grace, before_close=self._drain_rows)
            self.hook_errors += self.proxy.hook_errors
            self._tape_errors.extend(self.proxy.tape_errors)
            self.proxy = None
        if self.policy is not None:
            await self.policy.close()
        for mock in self.mocks.values():
            await mock.close()
        self.mocks = {}
        if self.store is not None:
            await asyncio.to_thread(self.store.close)
            self.store = None
            if self.policy is None or self.policy.writer.failed == 0:
                mark_stopped(self.tape_dir)  # else the next start reconciles the rows

    async def _drain_rows(self) -> None:
        if self.policy is not None:
            await self.policy.drain()

    async def idle(self, timeout: float) -> bool:
        """True once nothing is in flight and every ended exchange's row is committed."""
        if self.proxy is None or not await self.proxy.wait_idle(timeout):
            return False
        await self._drain_rows()
        return True

    @property
    def tape_errors(self) -> list[str]:
        live = [] if self.proxy is None else list(self.proxy.tape_errors)
        return [*self._tape_errors, *live]

    @property
    def store_errors(self) -> int:
        """Call rows that could not be written (each noted on its exchange's tape record)."""
        return self.hook_errors + (0 if self.proxy is None else self.proxy.hook_errors)


def check_exposure(host: str, *, tls: bool, allow_insecure_remote: bool) -> None:
    """Refuse a non-loopback listen address without TLS unless explicitly allowed."""
    if is_loopback(host) or tls or allow_insecure_remote:
        return
    raise UsageError(
        f"refusing to listen on {host} without TLS: the gateway holds real upstream keys "
        "and its clients' tokens; give --tls-cert and --tls-key, or --allow-insecure-remote"
        " to accept plain HTTP anyway"
    )


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A TLS server context from a PEM certificate chain and its key."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load the TLS certificate {cert} / key {key}: {exc}") from None
    return context

"""The recording reverse proxy as a server: configuration, lifecycle, embedding.

`ProxyServer(config)` runs on its own `AppRunner` (`await start()` returns the base URL,
`await stop()` drains and closes); `app()` returns the `aiohttp.web.Application` for a
caller that runs it on a runner of its own (the gateway). The tape writer and the upstream
client are created when the application starts and closed when it cleans up, after the
exchanges in flight have written their `end` frames.

Rules this module keeps:
- Loopback by default (`127.0.0.1:0`); accepting remote clients is the CLI's decision.
- The server cancels a handler when its client connection is lost (`handler_cancellation`,
  set through the application's `handler_args`, so it holds on an embedder's runner too):
  a client that goes away while the upstream is still thinking is noticed at once and the
  upstream request is cancelled.
- `stop(grace)` stops accepting, lets exchanges in flight finish for `grace` seconds,
  then cancels the rest (outcome `proxy_shutdown`) and closes the tape with an fsync.
- No log line it or aiohttp writes while serving carries a header value (`server_log`).
- With `server_ssl` it serves HTTPS (the gateway's `--tls-cert/--tls-key`).
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from roller.capture.tape import DEFAULT_FSYNC_INTERVAL, DEFAULT_SEGMENT_MAX_BYTES, TapeWriter
from roller.errors import UsageError
from roller.proxy import server_log
from roller.proxy.expect import defer_continue
from roller.proxy.local import LocalRoutes
from roller.proxy.policy import ExchangeEndHook, RequestPolicy
from roller.proxy.redaction import DEFAULT_REDACTOR, Redactor
from roller.proxy.relay import Relay
from roller.proxy.routing import Upstreams
from roller.proxy.upstream import MAX_FIELD_SIZE, MAX_LINE_SIZE, UpstreamClient, make_ssl_context

log = logging.getLogger("roller.proxy")

DEFAULT_MAX_REQUEST_BODY = 256 * 1024 * 1024
DEFAULT_MAX_KEPT_RESPONSE = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """Everything a proxy needs. `upstreams` must name at least one upstream unless a
    `policy` chooses upstreams itself."""

    tape_dir: Path
    upstreams: Upstreams
    host: str = "127.0.0.1"
    port: int = 0
    ca_bundle: Path | None = None
    ssl_context: ssl.SSLContext | None = None  # wins over ca_bundle (tests, embedders)
    connect_timeout: float | None = 10.0
    read_timeout: float | None = 600.0  # idle time between two reads, not the total
    max_request_body: int = DEFAULT_MAX_REQUEST_BODY
    # A response body kept for the end hook (`PolicyDecision.keep_response`) up to this.
    max_kept_response: int = DEFAULT_MAX_KEPT_RESPONSE
    redactor: Redactor = DEFAULT_REDACTOR
    server_ssl: ssl.SSLContext | None = None  # serve HTTPS with this context
    segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES
    fsync_interval: float | None = DEFAULT_FSYNC_INTERVAL
    policy: RequestPolicy | None = None
    on_exchange_end: ExchangeEndHook | None = None
    local: LocalRoutes | None = None  # an embedder's own routes (`roller.proxy.local`)

    def __post_init__(self) -> None:
        if not self.upstreams.configured() and self.policy is None:
            raise UsageError("the proxy needs an upstream (--upstream or a per-protocol one)")


class ProxyServer:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self._app: web.Application | None = None
        self._relay: Relay | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._stopping = False
        self.url: str | None = None
        self.tape_errors: list[str] = []

    # -- embedding ----------------------------------------------------------------------

    def app(self) -> web.Application:
        """The proxy as an aiohttp application (built once; run it on one runner only)."""
        if self._app is None:
            server_log.install()
            # handler_args reach the server whichever runner runs the app (an embedder's too).
            app = web.Application(
                handler_args={
                    "handler_cancellation": True,
                    "max_field_size": MAX_FIELD_SIZE,
                    "max_line_size": MAX_LINE_SIZE,
                }
            )
            config = self.config
            relay = self._relay = Relay(
                upstreams=config.upstreams,
                policy=config.policy,
                on_exchange_end=config.on_exchange_end,
                max_request_body=config.max_request_body,
                max_kept_response=config.max_kept_response,
                redactor=config.redactor,
                stopping=lambda: self._stopping,
                local=config.local,
            )
            app.cleanup_ctx.append(self._lifecycle)
            app.on_shutdown.append(self._on_shutdown)
            # The exchange's own coroutine is the handler: no coroutine level in between.
            app.router.add_route("*", "/{tail:.*}", relay.handler(), expect_handler=defer_continue)
            self._app = app
        return self._app

    async def _lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        config = self.config
        context = config.ssl_context or make_ssl_context(config.ca_bundle)
        tape = TapeWriter(
            config.tape_dir,
            segment_max_bytes=config.segment_max_bytes,
            fsync_interval=config.fsync_interval,
        )
        client = UpstreamClient(
            ssl_context=context,
            connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout,
        )
        relay = self._relay
        assert relay is not None  # built with the application
        relay.open(tape, client)
        try:
            yield
        finally:
            # Handlers cancelled by the runner record their end frame when they next run.
            await relay.wait_idle(5.0)
            await client.close()
            tape.close()
            self.tape_errors = list(tape.errors)

    async def _on_shutdown(self, app: web.Application) -> None:
        # Runs on any runner's cleanup before it cancels the handlers still running, so
        # those are recorded as `proxy_shutdown`, not as clients going away.
        self._stopping = True

    @property
    def relay(self) -> Relay | None:
        return self._relay

    @property
    def in_flight(self) -> int:
        relay = self.relay
        return 0 if relay is None else relay.in_flight

    @property
    def hook_errors(self) -> int:
        """End hooks that failed since the proxy started (each noted on its exchange)."""
        relay = self.relay
        return 0 if relay is None else relay.hook_errors

    @property
    def exchanges(self) -> int:
        """Exchanges started since the proxy started."""
        relay = self.relay
        return 0 if relay is None else relay.exchanges

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """True once nothing is in flight (end hooks are part of it); False on timeout."""
        relay = self.relay
        return True if relay is None else await relay.wait_idle(timeout)

    # -- running it ourselves -----------------------------------------------------------

    async def start(self) -> str:
        """Bind, start, and return the base URL (`http://127.0.0.1:PORT`)."""
        if self._runner is not None:
            raise RuntimeError("proxy already started")
        runner = web.AppRunner(
            self.app(),
            handle_signals=False,
            access_log=None,
            shutdown_timeout=0.1,  # stop() already gave the grace period
        )
        await runner.setup()
        site = web.TCPSite(
            runner, self.config.host, self.config.port, ssl_context=self.config.server_ssl
        )
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            where = f"{self.config.host}:{self.config.port}"
            raise UsageError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        self._runner, self._site = runner, site
        port = runner.addresses[0][1]  # the bound port, when 0 asked for any
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        scheme = "http" if self.config.server_ssl is None else "https"
        self.url = f"{scheme}://{shown}:{port}"
        return self.url

    async def stop(
        self, grace: float = 5.0, before_close: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Stop accepting, give exchanges in flight `grace` seconds, then cancel the rest
        (recorded as `proxy_shutdown`), await `before_close` (work the end hook handed on,
        which may still note failures on the tape) and close the tape. Idempotent."""
        runner, site = self._runner, self._site
        if runner is None:
            return
        self._runner = self._site = None
        if site is not None:
            await site.stop()
        await self.wait_idle(grace)
        if before_close is not None:
            await before_close()
        await runner.cleanup()

    def note_hook_error(self, exchange_id: str, exc: BaseException) -> None:
        """Count and tape a failure of work an end hook handed on (`Relay.note_hook_error`)."""
        relay = self.relay
        if relay is None:
            log.error("could not note the hook failure on exchange %s", exchange_id)
            return
        relay.note_hook_error(exchange_id, exc)


def is_loopback(host: str) -> bool:
    """Whether a listen address is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

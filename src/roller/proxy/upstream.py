"""The proxy's one client towards upstreams, and how its failures are named.

Rules this module keeps:
- One pool of keep-alive connections for the proxy's lifetime (`upstream_connections`,
  roller's own HTTP/1.1 requests over aiohttp's response protocol): bytes are relayed and
  recorded exactly as received (nothing decompressed), no cookie jar (the proxy must
  never carry one client's cookies into another's request), no environment proxies, no
  redirects followed (a redirect is relayed like any response), and no header of the
  client's own making (no `User-Agent`/`Accept`/`Content-Type`: the client's are
  forwarded; absent ones stay absent).
- TLS is verified against the system trust store, a CA bundle, or a given SSL context.
- Timeouts: a connect timeout; no total timeout (a stream may legitimately last for
  many minutes); an idle read timeout between two reads (None disables it), kept by the
  proxy on one timer (`idle_watch`), not per read.
- Every failure becomes an `UpstreamFailure` with the tape outcome, a stable error code,
  and the status/JSON error the client receives when no response has started.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Awaitable
from pathlib import Path
from typing import Final

import aiohttp
from yarl import URL

from roller.capture.tape import Outcome
from roller.errors import UsageError
from roller.proxy.policy import ExchangeError
from roller.proxy.upstream_connections import (
    MAX_FIELD_SIZE,
    MAX_LINE_SIZE,
    ConnectFailed,
    ConnectionPool,
    HeaderInjection,
    Headers,
    MalformedResponse,
    UpstreamResponse,
)

__all__ = ["MAX_FIELD_SIZE", "MAX_LINE_SIZE", "UpstreamClient", "UpstreamResponse"]

# What awaiting `UpstreamClient.send` raises for a failure before the response head.
SEND_ERRORS: Final = (
    ConnectFailed,
    MalformedResponse,
    HeaderInjection,
    TimeoutError,
    aiohttp.ClientError,
    OSError,
)


def make_ssl_context(ca_bundle: Path | None) -> ssl.SSLContext:
    """A verifying client context: the system trust store, or only `ca_bundle`."""
    if ca_bundle is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=str(ca_bundle))
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load CA bundle {ca_bundle}: {exc}") from None


class UpstreamFailure(Exception):
    """An upstream exchange failed; everything the proxy needs to record and answer it."""

    def __init__(
        self, outcome: Outcome, error: ExchangeError, client_status: int, client_error_type: str
    ) -> None:
        super().__init__(error.message)
        self.outcome: Outcome = outcome
        self.error = error
        self.client_status = client_status
        self.client_error_type = client_error_type

    def client_body(self) -> dict[str, dict[str, str]]:
        return {"error": {"type": self.client_error_type, "message": self.error.message}}


def _connect_failure(code: str, message: str) -> UpstreamFailure:
    return UpstreamFailure(
        "upstream_connect_error",
        ExchangeError(code, message),
        502,
        "roller_upstream_unreachable",
    )


def _connect_failed(cause: BaseException, where: str, url: URL) -> UpstreamFailure:
    text = str(cause) or type(cause).__name__
    if isinstance(cause, ssl.SSLError):
        return _connect_failure("tls_error", f"TLS handshake with {where} failed: {text}")
    if isinstance(cause, socket.gaierror):
        return _connect_failure("dns_error", f"cannot resolve {url.host}: {text}")
    if isinstance(cause, TimeoutError):
        return _connect_failure("connect_timeout", f"connecting to {where} timed out")
    return _connect_failure("connect_failed", f"cannot connect to {where}: {text}")


def _disconnected(code: str, message: str) -> UpstreamFailure:
    return UpstreamFailure(
        "upstream_disconnected", ExchangeError(code, message), 502, "roller_upstream_disconnected"
    )


def _proxy_error(code: str, message: str) -> UpstreamFailure:
    return UpstreamFailure("proxy_error", ExchangeError(code, message), 502, "roller_proxy_error")


def classify(exc: BaseException, url: URL) -> UpstreamFailure:
    """Name a failure talking to `url` (no credentials appear in messages)."""
    where = f"{url.scheme}://{url.host}:{url.port}"
    if isinstance(exc, ConnectFailed):
        return _connect_failed(exc.cause, where, url)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, HeaderInjection):
        return _proxy_error("invalid_header", f"not sent to {where}: {text}")
    if isinstance(exc, MalformedResponse):
        return _disconnected("connection_lost", f"{where} sent a response that is not HTTP: {text}")
    if isinstance(exc, TimeoutError):  # the idle watch's: the upstream was silent too long
        return UpstreamFailure(
            "upstream_timeout",
            ExchangeError("read_timeout", f"{where} sent nothing within the read timeout"),
            504,
            "roller_upstream_timeout",
        )
    if isinstance(exc, aiohttp.ClientPayloadError):
        return _disconnected("incomplete_body", f"{where} ended the response early: {text}")
    if isinstance(exc, (aiohttp.ClientConnectionError, OSError)):
        return _disconnected("connection_lost", f"{where} closed the connection: {text}")
    return _proxy_error("client_error", f"{type(exc).__name__}: {text}")


class UpstreamClient:
    """Sends requests upstream. Create it inside the running event loop; `close()` it."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self.read_timeout = read_timeout  # the proxy's `IdleWatches` keep it
        self._pool = ConnectionPool(ssl_context, connect_timeout)

    def send(
        self, method: str, url: URL, headers: Headers, body: bytes
    ) -> Awaitable[UpstreamResponse]:
        """Send a request: awaiting the result gives the response once its head arrived
        (the body still streaming). What the await raises before the head arrived
        (`SEND_ERRORS`) is named by `classify`."""
        return self._pool.send(method, url, headers, body)

    async def close(self) -> None:
        self._pool.close()

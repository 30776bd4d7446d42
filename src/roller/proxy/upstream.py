"""The proxy's one HTTP client towards upstreams, and how its failures are named.

Rules this module keeps:
- One `aiohttp.ClientSession` for the proxy's lifetime (connection reuse), with
  `auto_decompress=False` so bytes are relayed and recorded exactly as received, no cookie
  jar (the proxy must never carry one client's cookies into another's request), no
  environment proxies, no redirects followed (a redirect is relayed like any response),
  and no automatic `User-Agent`/`Accept`/`Content-Type` headers (the client's own are
  forwarded; absent ones stay absent).
- TLS is verified against the system trust store, a CA bundle, or a given SSL context.
- Timeouts: a connect timeout; no total timeout (a stream may legitimately last for
  many minutes); an idle read timeout between two reads (None disables it), kept by the
  proxy on one timer (`idle_watch`), not by aiohttp's per-read `sock_read` timer.
- Every aiohttp failure becomes an `UpstreamFailure` with the tape outcome, a stable error
  code, and the status/JSON error the client receives when no response has started.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable
from pathlib import Path
from typing import Final

import aiohttp
from aiohttp import hdrs
from multidict import CIMultiDict
from yarl import URL

from roller.capture.tape import Outcome
from roller.errors import UsageError
from roller.proxy.policy import ExchangeError

# What awaiting `UpstreamClient.send` raises for a failure before the response head.
SEND_ERRORS: Final = (TimeoutError, aiohttp.ClientError, OSError)

# Codex and Claude Code send large identity headers; aiohttp's 8 KiB default is too small.
MAX_FIELD_SIZE = 64 * 1024
MAX_LINE_SIZE = 64 * 1024


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


def classify(exc: BaseException, url: URL) -> UpstreamFailure:
    """Name an aiohttp/OS failure talking to `url` (no credentials appear in messages)."""
    where = f"{url.scheme}://{url.host}:{url.port}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientSSLError):
        return _connect_failure("tls_error", f"TLS handshake with {where} failed: {text}")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return _connect_failure("dns_error", f"cannot resolve {url.host}: {text}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _connect_failure("connect_failed", f"cannot connect to {where}: {text}")
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return _connect_failure("connect_timeout", f"connecting to {where} timed out")
    if isinstance(exc, TimeoutError):  # aiohttp's read timeouts subclass it
        return UpstreamFailure(
            "upstream_timeout",
            ExchangeError("read_timeout", f"{where} sent nothing within the read timeout"),
            504,
            "roller_upstream_timeout",
        )
    if isinstance(exc, aiohttp.ClientPayloadError):
        return UpstreamFailure(
            "upstream_disconnected",
            ExchangeError("incomplete_body", f"{where} ended the response early: {text}"),
            502,
            "roller_upstream_disconnected",
        )
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientResponseError, OSError)):
        return UpstreamFailure(
            "upstream_disconnected",
            ExchangeError("connection_lost", f"{where} closed the connection: {text}"),
            502,
            "roller_upstream_disconnected",
        )
    return UpstreamFailure(
        "proxy_error",
        ExchangeError("client_error", f"{type(exc).__name__}: {text}"),
        502,
        "roller_proxy_error",
    )


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
        connector = aiohttp.TCPConnector(ssl=ssl_context, limit=0, limit_per_host=0)
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            timeout=aiohttp.ClientTimeout(
                total=None, connect=None, sock_connect=connect_timeout, sock_read=None
            ),
            skip_auto_headers=(hdrs.USER_AGENT, hdrs.ACCEPT, hdrs.CONTENT_TYPE),
            max_field_size=MAX_FIELD_SIZE,
            max_line_size=MAX_LINE_SIZE,
            raise_for_status=False,
        )

    def send(
        self, method: str, url: URL, headers: list[tuple[str, str]] | CIMultiDict[str], body: bytes
    ) -> Awaitable[aiohttp.ClientResponse]:
        """Send a request: awaiting the result gives the response once its head arrived
        (the body still streaming). A plain call returning aiohttp's awaitable, not a
        coroutine of its own: no coroutine level over the wait for the upstream. What the
        await raises before the head arrived (`SEND_ERRORS`) is named by `classify`."""
        return self._session.request(
            method,
            url,
            headers=headers,
            data=body if body or method not in ("GET", "HEAD") else None,
            allow_redirects=False,
            compress=None,
        )

    async def close(self) -> None:
        await self._session.close()

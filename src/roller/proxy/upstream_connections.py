"""The proxy's HTTP/1.1 connections to upstreams: a keep-alive pool, a request written
in one call, a response read as its head and a stream of body bytes.

Why not `aiohttp.ClientSession`: for every request it builds a `ClientRequest` and a
`ClientResponse`, runs its timer, trace and middleware machinery and writes the body
from a task of its own. Measured on this VM (a small JSON request to a local upstream,
the client's CPU alone) that was ~185 µs a request against ~90 µs here: about as much as
everything roller's recording costs. The proxy sends one kind of request only — a
method, a target, header pairs already decided, a body already whole — so it writes the
request itself and keeps aiohttp's parts below that line: `ResponseHandler` (the client
protocol around aiohttp's C response parser, with its flow control and its errors when
a connection ends early) and `StreamReader` for the body. Checked against aiohttp
3.14.5's `client_proto` and `client_reqrep` (what it writes, what it reuses).

Rules this module keeps:
- A request is written as aiohttp wrote it with the proxy's settings: the request line
  (the target's raw path and query), `Host` (the URL's host, its port unless the
  scheme's default; unless a header names one), the header pairs in order, then
  `Content-Length` when there is a body or the method is not GET or HEAD. Nothing else is
  added. A CR or LF inside a header is refused before a byte is sent (`HeaderInjection`).
  Head and body go out in one write up to `COPY_LIMIT` bytes of body, in two beyond (a
  large body is not copied to join its head).
- A connection serves one request at a time and is reused only when its response was
  read to the end and neither side asked to close (`ResponseHandler.should_close`).
  Idle connections are reused newest first and closed after `KEEPALIVE` seconds unused
  (aiohttp's default too; one timer for the pool, running only while a connection is
  idle); a request is never retried (a model call is not idempotent).
- TLS is asyncio's, with the given context (it checks the hostname; SNI is the host).
  The connect timeout covers the TCP connect and the TLS handshake.
- `TCP_NODELAY` is on (`BaseProtocol.connection_made`), as aiohttp's connector sets it.
- What fails before the response head is raised as `ConnectFailed` (no byte went out),
  `MalformedResponse` (the upstream's head is not HTTP; the parser's complaint without
  the line it quotes, which may hold a secret), or aiohttp's own
  `ServerDisconnectedError`/`ClientOSError` (the connection ended first); the body's
  stream raises aiohttp's `ClientPayloadError` when it ends early. `upstream.classify`
  names each one.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from typing import Final

from aiohttp.client_exceptions import ClientConnectionError
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import RawResponseMessage
from aiohttp.streams import StreamReader
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

KEEPALIVE: Final = 15.0  # seconds an idle connection is kept
MAX_IDLE_PER_ORIGIN: Final = 256  # idle connections kept for one scheme, host and port
READ_BUFSIZE: Final = 1 << 16  # the body stream's high-water mark, as ClientSession's
COPY_LIMIT: Final = 1 << 16  # a body up to this size is sent in one piece with its head
# Codex and Claude Code send large identity headers; aiohttp's 8 KiB default is too small.
MAX_FIELD_SIZE: Final = 64 * 1024
MAX_LINE_SIZE: Final = 64 * 1024

Origin = tuple[str, str, int]  # scheme, host, port
Headers = Sequence[tuple[str, str]] | CIMultiDict[str]  # the pairs to send, in order


class ConnectFailed(Exception):
    """The TCP connection or TLS handshake to an upstream failed; nothing was sent."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.cause = cause


class MalformedResponse(Exception):
    """The upstream's response head could not be parsed as HTTP/1.x."""


class HeaderInjection(ValueError):
    """A header name or value holds a CR or LF: it would split the request."""


def request_head(method: str, url: URL, headers: Headers, size: int) -> bytes:
    """The bytes of a request's head, as `ConnectionPool.send` writes them (`size` is the
    body's length, or -1 for a bodiless GET or HEAD)."""
    pairs = headers.items() if isinstance(headers, CIMultiDict) else headers
    lines = "".join([f"{name}: {value}\r\n" for name, value in pairs])
    count = len(headers)
    if lines.count("\r") != count or lines.count("\n") != count:
        raise HeaderInjection("a header name or value holds a CR or LF")
    # Names hold no ":" and values no line break, so a line that starts "host:" is one.
    if "\nhost:" not in f"\n{lines}".lower():
        lines = f"Host: {url.host_port_subcomponent}\r\n{lines}"
    if size >= 0:
        lines = f"{lines}Content-Length: {size}\r\n"
    return f"{method} {url.raw_path_qs} HTTP/1.1\r\n{lines}\r\n".encode("utf-8", "surrogateescape")


def _what_is_wrong(exc: HttpProcessingError) -> str:
    """The parser's complaint without the line it quotes after a blank line: that line
    may be a response header holding a secret (a `set-cookie`), and the message is
    recorded on the tape."""
    said = str(exc.message or type(exc).__name__).split("\n\n", 1)[0]
    return " ".join(said.split()).rstrip(":")


class UpstreamResponse:
    """An upstream's response once its head arrived: status, reason, version, headers, and
    `content`, the body's byte stream (aiohttp's `StreamReader`). `release()` once the body
    was read to its end gives the connection back for reuse; `close()` drops it (which is
    what cancels a request upstream). Either may be called more than once."""

    __slots__ = (
        "_origin",
        "_pool",
        "_protocol",
        "content",
        "headers",
        "reason",
        "status",
        "version",
    )

    def __init__(
        self,
        pool: ConnectionPool,
        origin: Origin,
        protocol: ResponseHandler,
        message: RawResponseMessage,
        content: StreamReader,
    ) -> None:
        self._pool, self._origin = pool, origin
        self._protocol: ResponseHandler | None = protocol
        self.status: int = message.code
        self.reason: str = message.reason
        self.version = message.version
        self.headers: CIMultiDictProxy[str] = message.headers
        self.content = content

    def release(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            self._pool.give_back(self._origin, protocol)

    def close(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            self._pool.drop(protocol)


class ConnectionPool:
    """Keep-alive connections to upstreams. Create it inside the running event loop."""

    def __init__(self, ssl_context: ssl.SSLContext, connect_timeout: float | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._ssl = ssl_context
        self._connect_timeout = connect_timeout
        self._idle: dict[Origin, list[tuple[ResponseHandler, float]]] = {}
        # Every connection not yet dropped, with the body it is reading (None: idle, or
        # before its head), so that closing the pool ends a body someone still reads.
        self._open: dict[ResponseHandler, StreamReader | None] = {}
        self._closed = False
        self._sweep: asyncio.TimerHandle | None = None  # `_expire`, while any is idle

    async def send(self, method: str, url: URL, headers: Headers, body: bytes) -> UpstreamResponse:
        """Send one request; the response once its head arrived (its body still coming).
        Cancelled while waiting, the connection is dropped."""
        size = len(body) if body or method not in ("GET", "HEAD") else -1
        head = request_head(method, url, headers, size)
        origin: Origin = (url.scheme, url.host or "", url.port or 0)
        protocol = self._reuse(origin)  # (not `or`: an idle protocol's len() is 0)
        if protocol is None:
            protocol = await self._connect(origin)
        transport = protocol.transport
        assert transport is not None  # a live connection, just taken or made
        try:
            protocol.set_response_params(
                skip_payload=method == "HEAD",
                read_until_eof=True,
                auto_decompress=False,
                read_bufsize=READ_BUFSIZE,
                max_line_size=MAX_LINE_SIZE,
                max_field_size=MAX_FIELD_SIZE,
            )
            if len(body) <= COPY_LIMIT:
                transport.write(head + body)  # one send
            else:  # not a second copy of a large body
                transport.write(head)
                transport.write(body)
            while True:
                message, content = await protocol.read()
                code = message.code
                if code < 100 or code > 199 or code == 101:  # an interim 1xx: the next
                    break
        except HttpProcessingError as exc:
            self.drop(protocol)
            raise MalformedResponse(_what_is_wrong(exc)) from None
        except BaseException:
            self.drop(protocol)
            raise
        self._open[protocol] = content
        return UpstreamResponse(self, origin, protocol, message, content)

    def _reuse(self, origin: Origin) -> ResponseHandler | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = self._loop.time()
        while idle:
            protocol, since = idle.pop()
            if protocol.is_connected() and now - since <= KEEPALIVE:
                return protocol
            self.drop(protocol)
        return None

    async def _connect(self, origin: Origin) -> ResponseHandler:
        scheme, host, port = origin
        tls = scheme == "https"
        loop = self._loop
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, protocol = await loop.create_connection(
                    lambda: ResponseHandler(loop),
                    host,
                    port,
                    ssl=self._ssl if tls else None,
                    server_hostname=host.rstrip(".") if tls else None,
                )
        except (OSError, TimeoutError) as exc:  # ssl.SSLError and socket.gaierror too
            raise ConnectFailed(exc) from None
        if self._closed:  # closed while connecting
            protocol.close()
            raise ConnectFailed(ConnectionAbortedError("the proxy is closing"))
        self._open[protocol] = None
        return protocol

    def give_back(self, origin: Origin, protocol: ResponseHandler) -> None:
        """A connection whose response was read: kept for reuse when it can be."""
        if self._closed or protocol.should_close or not protocol.is_connected():
            self.drop(protocol)
            return
        self._open[protocol] = None
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            self.drop(idle.pop(0)[0])
        idle.append((protocol, self._loop.time()))
        if self._sweep is None:
            self._sweep = self._loop.call_later(KEEPALIVE, self._expire)

    def _expire(self) -> None:
        """Close the connections idle for `KEEPALIVE` seconds; come back when the oldest
        left will be (one timer for the pool, only while a connection is idle)."""
        self._sweep = None
        now = self._loop.time()
        for origin, idle in list(self._idle.items()):
            while idle and now - idle[0][1] >= KEEPALIVE:  # oldest first
                self.drop(idle.pop(0)[0])
            if not idle:
                del self._idle[origin]
        if self._idle:
            oldest = min(idle[0][1] for idle in self._idle.values())
            self._sweep = self._loop.call_at(oldest + KEEPALIVE, self._expire)

    def drop(self, protocol: ResponseHandler) -> None:
        self._open.pop(protocol, None)
        protocol.close()

    def close(self) -> None:
        """Close every connection, idle or in use; a body still being read then raises
        `ClientConnectionError` (aiohttp's protocol, closed by its owner, would leave its
        reader waiting)."""
        self._closed = True
        self._idle.clear()
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for protocol, content in list(self._open.items()):
            if content is not None and not content.is_eof():
                content.set_exception(ClientConnectionError("the proxy closed the connection"))
            self.drop(protocol)

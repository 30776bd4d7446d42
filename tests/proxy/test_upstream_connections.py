"""The proxy's own HTTP/1.1 client (`roller.proxy.upstream_connections`), over real
loopback sockets: the bytes of a request, which connections are reused, and how each way
a connection can fail before or during a response comes out (and is named by
`upstream.classify`)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable, Coroutine

import aiohttp
import pytest
from yarl import URL

from roller.proxy import upstream_connections
from roller.proxy.upstream import SEND_ERRORS, classify
from roller.proxy.upstream_connections import (
    ConnectFailed,
    ConnectionPool,
    HeaderInjection,
    MalformedResponse,
    request_head,
)

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class Upstream:
    """A loopback server that answers each request head (and its announced body) with the
    next of `answers`: what it received, and how many connections it accepted."""

    def __init__(self, answers: list[bytes], *, close_after: bool = False) -> None:
        self.answers = answers
        self.close_after = close_after
        self.received: list[bytes] = []
        self.connections = 0
        self.closed_by_peer = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Upstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    def url(self, target: str = "/v1/messages") -> URL:
        return URL(f"http://127.0.0.1:{self.port}{target}", encoded=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        size = int(line.split(b":", 1)[1])
                self.received.append(head + await reader.readexactly(size))
                writer.write(self.answers.pop(0))
                await writer.drain()
                if self.close_after:
                    break
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                self.closed_by_peer += 1
        except asyncio.CancelledError:
            pass  # the test's loop is ending
        finally:
            writer.close()


async def _body(response: upstream_connections.UpstreamResponse) -> bytes:
    parts = []
    while data := await response.content.readany():
        parts.append(data)
    return b"".join(parts)


def run(test: Callable[[], Coroutine[None, None, None]]) -> None:
    asyncio.run(test())


def _pool() -> ConnectionPool:
    return ConnectionPool(ssl.create_default_context(), connect_timeout=5)


# -- the request's bytes ------------------------------------------------------------------


def test_the_head_is_what_aiohttp_wrote_with_the_proxys_settings() -> None:
    url = URL("http://127.0.0.1:8080/v1/messages?beta=true&x=a%2Fb", encoded=True)
    head = request_head("POST", url, [("x-api-key", "k"), ("Accept-Encoding", "identity")], 3)
    assert head == (
        b"POST /v1/messages?beta=true&x=a%2Fb HTTP/1.1\r\n"
        b"Host: 127.0.0.1:8080\r\n"
        b"x-api-key: k\r\n"
        b"Accept-Encoding: identity\r\n"
        b"Content-Length: 3\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://api.anthropic.com/v1/messages", "api.anthropic.com"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:8443/", "example.com:8443"),
        ("http://[::1]:9000/", "[::1]:9000"),
    ],
)
def test_host_names_the_port_only_when_it_is_not_the_schemes(url: str, host: str) -> None:
    head = request_head("GET", URL(url), [], -1)
    assert head.split(b"\r\n")[1] == b"Host: " + host.encode()


def test_a_bodiless_get_has_no_length_and_a_header_given_host_is_kept() -> None:
    head = request_head("GET", URL("http://a:1/"), [("HOST", "b")], -1)
    assert head == b"GET / HTTP/1.1\r\nHOST: b\r\n\r\n"
    assert b"Host: a:1" in request_head("GET", URL("http://a:1/"), [("x-host", "b")], -1)
    assert request_head("POST", URL("http://a:1/"), [], 0).endswith(b"Content-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    "header", [("x-a", "v\r\nx-b: smuggled"), ("x-a", "v\nx"), ("x-a", "v\r"), ("x\na", "v")]
)
def test_a_line_break_inside_a_header_is_refused(header: tuple[str, str]) -> None:
    with pytest.raises(HeaderInjection):
        request_head("POST", URL("http://a:1/"), [header], 0)
    failure = classify(HeaderInjection("x"), URL("http://a:1/"))
    assert (failure.outcome, failure.error.code, failure.client_status) == (
        "proxy_error",
        "invalid_header",
        502,
    )


def test_the_request_reaches_the_upstream_byte_for_byte() -> None:
    async def test() -> None:
        async with Upstream([OK]) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [("a", "1")], b"abc")
            assert (response.status, response.reason, await _body(response)) == (200, "OK", b"ok")
            host = f"127.0.0.1:{up.port}".encode()
            assert up.received == [
                b"POST /v1/messages HTTP/1.1\r\nHost: " + host + b"\r\na: 1\r\n"
                b"Content-Length: 3\r\n\r\nabc"
            ]
            response.release()
            pool.close()

    run(test)


def test_a_large_body_arrives_whole_after_its_head() -> None:
    async def test() -> None:
        body = bytes(range(256)) * 1024  # 256 KiB: past COPY_LIMIT, written apart
        assert len(body) > upstream_connections.COPY_LIMIT
        async with Upstream([OK]) as up:
            pool = _pool()
            response = await pool.send("PUT", up.url(), [], body)
            assert await _body(response) == b"ok"
            head, _, received = up.received[0].partition(b"\r\n\r\n")
            assert head.endswith(b"Content-Length: 262144") and received == body
            response.release()
            pool.close()

    run(test)


# -- which connections are reused ---------------------------------------------------------


def test_a_connection_read_to_its_end_is_reused() -> None:
    async def test() -> None:
        async with Upstream([OK, OK, OK]) as up:
            pool = _pool()
            for _ in range(3):
                response = await pool.send("POST", up.url(), [], b"x")
                assert await _body(response) == b"ok"
                response.release()
                response.release()  # twice is harmless
            assert up.connections == 1
            pool.close()

    run(test)


@pytest.mark.parametrize(
    "first",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    ],
)
def test_a_response_that_asks_to_close_is_not_reused(first: bytes) -> None:
    async def test() -> None:
        async with Upstream([first, OK]) as up:
            pool = _pool()
            for _ in range(2):
                response = await pool.send("POST", up.url(), [], b"x")
                assert await _body(response) == b"ok"
                response.release()
            assert up.connections == 2
            pool.close()

    run(test)


def test_a_body_until_the_connection_ends_is_read_whole_and_not_reused() -> None:
    async def test() -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"
        async with Upstream([answer, OK], close_after=True) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [], b"x")
            assert await _body(response) == b"all of it"
            response.release()
            response = await pool.send("POST", up.url(), [], b"x")
            assert await _body(response) == b"ok"
            assert up.connections == 2
            pool.close()

    run(test)


def test_a_response_closed_before_its_end_drops_the_connection() -> None:
    async def test() -> None:
        big = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"a" * 1000
        async with Upstream([big, OK]) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [], b"x")
            response.close()
            response.release()  # after close: nothing to give back
            response = await pool.send("POST", up.url(), [], b"x")
            assert await _body(response) == b"ok"
            assert up.connections == 2
            pool.close()

    run(test)


def test_an_idle_connection_past_the_keepalive_or_closed_by_the_peer_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def test() -> None:
        async with Upstream([OK, OK, OK, OK]) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [], b"x")
            await _body(response)
            response.release()
            monkeypatch.setattr(upstream_connections, "KEEPALIVE", -1.0)
            response = await pool.send("POST", up.url(), [], b"x")
            await _body(response)
            assert up.connections == 2
            monkeypatch.setattr(upstream_connections, "KEEPALIVE", 15.0)
            response.release()
            up.close_after = True  # the next answer is the connection's last
            response = await pool.send("POST", up.url(), [], b"x")
            await _body(response)
            response.release()
            await asyncio.sleep(0.05)  # the peer's close arrives
            response = await pool.send("POST", up.url(), [], b"x")
            assert await _body(response) == b"ok"
            assert up.connections == 3
            pool.close()

    run(test)


def test_an_idle_connection_is_closed_once_the_keepalive_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(upstream_connections, "KEEPALIVE", 0.5)

    async def closed(count: int) -> None:
        for _ in range(300):
            if up.closed_by_peer >= count:
                return
            await asyncio.sleep(0.01)

    async def test() -> None:
        nonlocal up
        async with Upstream([OK, OK, OK]) as up:
            pool = _pool()
            first = await pool.send("POST", up.url(), [], b"x")
            second = await pool.send("POST", up.url(), [], b"x")  # a second connection
            await _body(first)
            first.release()
            await asyncio.sleep(0.25)
            await _body(second)
            second.release()
            await closed(1)  # the first, once its keep-alive is over
            assert up.closed_by_peer == 1  # the second's is not, yet
            await closed(2)
            assert up.closed_by_peer == 2
            response = await pool.send("POST", up.url(), [], b"x")  # a new one
            assert await _body(response) == b"ok"
            assert up.connections == 3
            pool.close()

    up = Upstream([])
    run(test)


def test_interim_responses_are_skipped_and_a_head_has_no_body() -> None:
    async def test() -> None:
        hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + OK
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
        async with Upstream([hints, head, OK]) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [], b"x")
            assert (response.status, await _body(response)) == (200, b"ok")
            response.release()
            response = await pool.send("HEAD", up.url(), [], b"")
            assert (response.status, response.headers["content-length"]) == (200, "5")
            assert await _body(response) == b""
            response.release()
            response = await pool.send("GET", up.url(), [], b"")
            assert await _body(response) == b"ok"
            assert up.connections == 1
            assert up.received[1].startswith(b"HEAD /v1/messages HTTP/1.1\r\n")
            assert b"Content-Length" not in up.received[1]
            pool.close()

    run(test)


def test_close_ends_idle_and_busy_connections() -> None:
    async def test() -> None:
        slow = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
        async with Upstream([OK, slow]) as up:
            pool = _pool()
            idle = await pool.send("POST", up.url(), [], b"x")
            await _body(idle)
            busy = await pool.send("POST", up.url("/b"), [], b"x")  # opens a second one
            idle.release()
            assert up.connections == 2
            pool.close()
            with pytest.raises(aiohttp.ClientConnectionError, match="closed the connection"):
                await _body(busy)  # not left waiting for the 7 bytes that will not come
            await asyncio.sleep(0.05)
            assert up.closed_by_peer == 2
            with pytest.raises(ConnectFailed):
                await pool.send("POST", up.url(), [], b"x")

    run(test)


# -- failures, and their names ------------------------------------------------------------


def _named(exc: BaseException) -> tuple[str, str]:
    failure = classify(exc, URL("http://127.0.0.1:1/"))
    return failure.outcome, failure.error.code


def test_a_refused_connection_is_connect_failed() -> None:
    async def test() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            with pytest.raises(ConnectFailed) as caught:
                await _pool().send("POST", URL(f"http://127.0.0.1:{port}/"), [], b"x")
        assert isinstance(caught.value.cause, ConnectionRefusedError)
        assert _named(caught.value) == ("upstream_connect_error", "connect_failed")
        assert "cannot connect" in classify(caught.value, URL("http://h:1/")).error.message

    run(test)


def test_connect_causes_are_named() -> None:
    assert _named(ConnectFailed(TimeoutError())) == ("upstream_connect_error", "connect_timeout")
    assert _named(ConnectFailed(socket.gaierror(-2, "Name or service not known"))) == (
        "upstream_connect_error",
        "dns_error",
    )
    assert _named(ConnectFailed(ssl.SSLCertVerificationError("certificate verify failed"))) == (
        "upstream_connect_error",
        "tls_error",
    )
    assert all(isinstance(e, SEND_ERRORS) for e in (ConnectFailed(OSError()), MalformedResponse()))


def test_an_upstream_that_closes_before_answering_or_answers_garbage() -> None:
    async def test() -> None:
        async with Upstream([b""], close_after=True) as up:
            with pytest.raises(aiohttp.ServerDisconnectedError) as caught:
                await _pool().send("POST", up.url(), [], b"x")
            assert _named(caught.value) == ("upstream_disconnected", "connection_lost")
        async with Upstream([b"SPDY/9 what\r\n\r\n"]) as up:
            with pytest.raises(MalformedResponse) as bad:
                await _pool().send("POST", up.url(), [], b"x")
            assert _named(bad.value) == ("upstream_disconnected", "connection_lost")
        # The parser quotes the line it refused; a header line may hold a secret, and
        # the message goes on the tape: the quote is left out.
        secret = b"HTTP/1.1 200 OK\r\nSet Cookie: sess=planted-7f3a\r\n\r\n"
        async with Upstream([secret]) as up:
            with pytest.raises(MalformedResponse) as quoted:
                await _pool().send("POST", up.url(), [], b"x")
            message = classify(quoted.value, URL("http://h:1/")).error.message
            assert "planted-7f3a" not in message and "Invalid header token" in message

    run(test)


def test_a_body_cut_short_raises_a_payload_error() -> None:
    async def test() -> None:
        short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
        async with Upstream([short], close_after=True) as up:
            pool = _pool()
            response = await pool.send("POST", up.url(), [], b"x")
            with pytest.raises(aiohttp.ClientPayloadError) as caught:
                await _body(response)
            assert _named(caught.value) == ("upstream_disconnected", "incomplete_body")
            response.close()
            pool.close()

    run(test)

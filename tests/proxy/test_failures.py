"""Every way an exchange can go wrong ends as data on the tape, and the client is told."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import aiohttp
import pytest
from aiohttp import web

from roller.proxy import Upstreams
from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop, free_port

EVENT = b'data: {"type":"message_start"}\n\n'


def _app(handler: object, path: str = "/v1/messages") -> web.Application:
    app = web.Application()
    app.router.add_route("*", path, handler)  # type: ignore[arg-type]
    return app


async def _post(url: str, **kwargs: object) -> tuple[int, bytes, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={"model": "m"}, **kwargs) as response,  # type: ignore[arg-type]
    ):
        return (
            response.status,
            await response.read(),
            {k.lower(): v for k, v in response.headers.items()},
        )


def test_connect_refused_is_a_502_and_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    proxy = start_proxy(f"http://127.0.0.1:{free_port()}")
    status, body, _ = bg_loop.run(_post(proxy.url + "/v1/messages"))
    assert status == 502
    error = json.loads(body)["error"]
    assert error["type"] == "roller_upstream_unreachable"
    assert "cannot connect" in error["message"]
    exchange = proxy.only_exchange()
    assert exchange.outcome == "upstream_connect_error"
    assert exchange.response is None
    assert exchange.end.error.code == "connect_failed"
    assert exchange.end.client_status == 502
    assert exchange.end.client_body["error"]["type"] == "roller_upstream_unreachable"
    assert exchange.request_body == b'{"model": "m"}'


@pytest.mark.parametrize("status", [400, 429, 500, 529])
def test_upstream_error_statuses_are_relayed_verbatim(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory, status: int
) -> None:
    error_body = b'{"type":"error","error":{"type":"overloaded_error","message":"try later"}}'

    async def upstream(request: web.Request) -> web.Response:
        return web.Response(
            status=status,
            body=error_body,
            headers={"retry-after": "7", "content-type": "application/json", "request-id": "r1"},
        )

    proxy = start_proxy(bg_loop.serve(_app(upstream)))
    got_status, body, headers = bg_loop.run(_post(proxy.url + "/v1/messages"))
    assert (got_status, body) == (status, error_body)
    assert headers["retry-after"] == "7" and headers["request-id"] == "r1"
    exchange = proxy.only_exchange()
    assert exchange.outcome == "ok"
    assert exchange.response.status == status
    assert ["retry-after", "7"] in [[k.lower(), v] for k, v in exchange.response.headers]
    assert exchange.body == error_body
    assert exchange.end.client_status == exchange.end.upstream_status == status


def test_upstream_dying_mid_stream_truncates_the_client_and_is_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(EVENT)
        await asyncio.sleep(0.05)
        assert request.transport is not None
        request.transport.abort()  # the upstream dies: no terminating chunk
        return response

    proxy = start_proxy(bg_loop.serve(_app(upstream)))

    async def client() -> tuple[int, bytes, BaseException | None]:
        received = b""
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + "/v1/messages", json={}) as response,
        ):
            try:
                async for data in response.content.iter_any():
                    received += data
            except aiohttp.ClientPayloadError as exc:
                return response.status, received, exc
            return response.status, received, None

    status, received, error = bg_loop.run(client())
    assert status == 200
    assert received == EVENT
    assert error is not None  # the client can tell the body is incomplete
    exchange = proxy.only_exchange()
    assert exchange.outcome == "upstream_disconnected"
    assert exchange.end.error.code == "incomplete_body"
    assert exchange.body == EVENT
    assert exchange.end.client_status == 200


def test_upstream_closing_before_answering_is_a_502(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    async def upstream(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.abort()
        return web.Response()

    proxy = start_proxy(bg_loop.serve(_app(upstream)))
    status, body, _ = bg_loop.run(_post(proxy.url + "/v1/messages"))
    assert status == 502
    assert b"roller_upstream_disconnected" in body
    exchange = proxy.only_exchange()
    assert exchange.outcome == "upstream_disconnected"
    assert exchange.response is None


def test_client_disconnecting_mid_stream_cancels_the_upstream_and_is_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    upstream_saw_close = asyncio.Event()

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(EVENT)
        try:
            for _ in range(500):  # keeps streaming until the proxy drops the connection
                await asyncio.sleep(0.01)
                await response.write(b": ping\n\n")
        except ConnectionError:
            upstream_saw_close.set()
        return response

    proxy = start_proxy(bg_loop.serve(_app(upstream)))

    async def client() -> bytes:
        session = aiohttp.ClientSession()
        response = await session.post(proxy.url + "/v1/messages", json={})
        first = await response.content.readuntil(b"\n\n")
        response.close()  # the client goes away mid-stream
        await session.close()
        await asyncio.wait_for(upstream_saw_close.wait(), 5)
        return first

    assert bg_loop.run(client()) == EVENT
    exchange = proxy.only_exchange()
    assert exchange.outcome == "client_disconnected"
    assert exchange.body.startswith(EVENT)
    assert exchange.end.client_status == 200


def test_client_disconnecting_while_the_upstream_thinks(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    upstream_saw_close = asyncio.Event()

    async def upstream(request: web.Request) -> web.StreamResponse:
        await request.read()
        transport = request.transport
        assert transport is not None
        for _ in range(500):  # "thinking": no byte sent until the proxy drops us
            await asyncio.sleep(0.01)
            if transport.is_closing():
                upstream_saw_close.set()
                break
        return web.Response()

    proxy = start_proxy(bg_loop.serve(_app(upstream)))

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(session.post(proxy.url + "/v1/messages", json={}), 0.2)
        await asyncio.wait_for(upstream_saw_close.wait(), 5)

    bg_loop.run(client())
    exchange = proxy.only_exchange()
    assert exchange.outcome == "client_disconnected"
    assert exchange.response is None
    assert exchange.end.client_status is None


def test_no_upstream_for_the_endpoint(bg_loop: BackgroundLoop, start_proxy: ProxyFactory) -> None:
    async def upstream(request: web.Request) -> web.Response:
        return web.json_response({"id": "chatcmpl-1"})

    base = bg_loop.serve(_app(upstream, "/v1/chat/completions"))
    proxy = start_proxy(upstreams=Upstreams(openai=base))
    status, body, _ = bg_loop.run(_post(proxy.url + "/v1/messages"))
    assert status == 502 and b"roller_no_upstream" in body
    ok_status, _, _ = bg_loop.run(_post(proxy.url + "/v1/chat/completions"))
    assert ok_status == 200
    first, second = proxy.tape().exchanges
    assert first.outcome == "no_upstream" and first.request.upstream is None
    assert first.end.error.code == "no_upstream"
    assert second.outcome == "ok" and second.request.upstream == base


def test_idle_read_timeout_before_and_during_the_response(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    never = asyncio.Event()

    async def silent(request: web.Request) -> web.StreamResponse:
        await never.wait()
        return web.Response()

    async def stalls(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(EVENT)
        await never.wait()
        return response

    app = web.Application()
    app.router.add_post("/silent/v1/messages", silent)
    app.router.add_post("/stalls/v1/messages", stalls)
    proxy = start_proxy(bg_loop.serve(app), read_timeout=0.3)
    status, body, _ = bg_loop.run(_post(proxy.url + "/silent/v1/messages"))
    assert status == 504 and b"roller_upstream_timeout" in body

    async def client() -> tuple[bytes, bool]:
        received = b""
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + "/stalls/v1/messages", json={}) as response,
        ):
            try:
                async for data in response.content.iter_any():
                    received += data
            except aiohttp.ClientPayloadError:
                return received, True
        return received, False

    assert bg_loop.run(client()) == (EVENT, True)
    silent_ex, stalled_ex = proxy.tape().exchanges
    assert silent_ex.outcome == stalled_ex.outcome == "upstream_timeout"
    assert silent_ex.end.client_status == 504 and silent_ex.response is None
    assert stalled_ex.body == EVENT and stalled_ex.end.client_status == 200
    never.set()


def test_request_body_cut_short_by_the_client(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    reached = asyncio.Event()

    async def upstream(request: web.Request) -> web.Response:
        reached.set()
        return web.Response()

    proxy = start_proxy(bg_loop.serve(_app(upstream)))
    port = int(proxy.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"a" * 10
        )
        # Wait until the proxy has the head (its req frame is on the tape), then hang up.
        for _ in range(200):
            if proxy.server.in_flight:
                break
            time.sleep(0.005)
    exchange = proxy.only_exchange()
    assert exchange.outcome == "client_disconnected"
    assert exchange.request_body == b"a" * 10
    assert not reached.is_set()


def test_malformed_requests_are_refused_by_the_http_parser_and_not_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    proxy = start_proxy("http://127.0.0.1:9")
    port = int(proxy.url.rsplit(":", 1)[1])
    for raw in (
        b"NOT HTTP AT ALL\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(raw)
            answer = sock.recv(4096)
        assert answer.split(b" ", 2)[1] == b"400"
    assert proxy.tape().exchanges == ()


def test_a_forward_proxy_style_request_is_rejected_and_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    proxy = start_proxy("http://127.0.0.1:9")
    port = int(proxy.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET http://example.com/v1/models HTTP/1.1\r\nHost: example.com\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400") and b"roller_bad_request" in answer
    exchange = proxy.only_exchange()
    assert exchange.outcome == "rejected"
    assert exchange.end.error.code == "bad_request_target"


def test_request_body_over_the_limit_is_rejected(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    proxy = start_proxy("http://127.0.0.1:9", max_request_body=1000)

    async def client() -> tuple[int, bytes]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + "/v1/messages", data=b"z" * 5000) as response,
        ):
            return response.status, await response.read()

    status, body = bg_loop.run(client())
    assert status == 413 and b"roller_request_too_large" in body
    exchange = proxy.only_exchange()
    assert exchange.outcome == "rejected"
    assert exchange.end.error.code == "request_too_large"


def test_stopping_the_proxy_mid_stream_ends_the_exchange(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    never = asyncio.Event()

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(EVENT)
        await never.wait()
        return response

    proxy = start_proxy(bg_loop.serve(_app(upstream)))

    async def client() -> bytes:
        session = aiohttp.ClientSession()
        response = await session.post(proxy.url + "/v1/messages", json={})
        first = await response.content.readuntil(b"\n\n")
        await proxy.server.stop(grace=0.1)
        response.close()
        await session.close()
        return first

    assert bg_loop.run(client()) == EVENT
    exchange = proxy.only_exchange()
    assert exchange.outcome == "proxy_shutdown"
    assert exchange.body == EVENT
    never.set()

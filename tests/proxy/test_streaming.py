"""Bytes through the proxy: unbuffered streaming, exact relay, concurrent exchanges."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import socket
import time

import aiohttp
from aiohttp import web
from yarl import URL

from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop

EVENT_1 = b'event: message_start\ndata: {"type":"message_start"}\n\n'
EVENT_2 = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def test_client_gets_the_first_event_before_the_upstream_sends_the_second(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    gate = asyncio.Event()
    second_sent = False

    async def upstream(request: web.Request) -> web.StreamResponse:
        nonlocal second_sent
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(EVENT_1)
        # Event 2 is sent only after the test saw event 1 arrive through the proxy:
        # a proxy that buffered anything would leave the client waiting here forever.
        await gate.wait()
        second_sent = True
        await response.write(EVENT_2)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", upstream)
    proxy = start_proxy(bg_loop.serve(app))

    async def client() -> tuple[bytes, bytes, int]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + "/v1/messages", json={"stream": True}) as response,
        ):
            first = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 5)
            assert not second_sent
            released_at = time.time_ns()
            gate.set()
            rest = await asyncio.wait_for(response.content.read(), 5)
            return first, rest, released_at

    first, rest, released_at = bg_loop.run(client())
    assert first == EVENT_1
    assert rest == EVENT_2
    exchange = proxy.only_exchange()
    assert [data for _, data in exchange.chunks] == [EVENT_1, EVENT_2]
    # Arrival times: event 1 reached the tape before the gate opened, event 2 after.
    assert exchange.chunks[0][0] < released_at < exchange.chunks[1][0]
    assert exchange.outcome == "ok"


def test_bodies_are_relayed_and_recorded_byte_for_byte(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    seen: dict[str, object] = {}
    payload = gzip.compress(b'{"content":"' + b"x" * 5000 + b'"}')

    async def upstream(request: web.Request) -> web.Response:
        body = await request.read()
        seen["sha"] = hashlib.sha256(body).hexdigest()
        seen["accept_encoding"] = request.headers.get("accept-encoding")
        seen["content_length"] = request.headers.get("content-length")
        seen["user_agent"] = request.headers.get("user-agent")
        return web.Response(
            body=payload,
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", upstream)
    proxy = start_proxy(bg_loop.serve(app))
    request_body = bytes(range(256)) * 40 + "ünïcode".encode()

    async def client() -> tuple[bytes, dict[str, str]]:
        async with (
            aiohttp.ClientSession(auto_decompress=False, skip_auto_headers=["User-Agent"]) as s,
            s.post(
                proxy.url + "/v1/chat/completions",
                data=request_body,
                headers={"accept-encoding": "zstd, br, gzip", "content-type": "application/json"},
            ) as response,
        ):
            return await response.read(), dict(response.headers)

    body, headers = bg_loop.run(client())
    assert body == payload  # still compressed: the proxy never decodes
    assert headers["Content-Encoding"] == "gzip"
    assert int(headers["Content-Length"]) == len(payload)
    assert seen["sha"] == hashlib.sha256(request_body).hexdigest()
    assert seen["content_length"] == str(len(request_body))
    assert seen["accept_encoding"] == "gzip"  # narrowed to what the stdlib decodes
    assert seen["user_agent"] is None  # the proxy adds no headers of its own
    exchange = proxy.only_exchange()
    assert exchange.request_body == request_body
    assert exchange.body == payload
    assert gzip.decompress(exchange.body).startswith(b'{"content":"xxx')
    recorded = {k.lower(): v for k, v in exchange.request.headers}
    assert recorded["accept-encoding"] == "zstd, br, gzip"  # the client's original value
    assert exchange.end.response_bytes == exchange.end.client_bytes == len(payload)


def test_concurrent_streams_are_recorded_apart(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    async def upstream(request: web.Request) -> web.StreamResponse:
        name = (await request.json())["name"]
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for i in range(5):
            await response.write(f"data: {name}-{i}\n\n".encode())
            await asyncio.sleep(0.002)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/responses", upstream)
    proxy = start_proxy(bg_loop.serve(app))

    async def one(session: aiohttp.ClientSession, name: str) -> bytes:
        async with session.post(proxy.url + "/v1/responses", json={"name": name}) as response:
            return await response.read()

    async def clients() -> list[bytes]:
        async with aiohttp.ClientSession() as session:
            return await asyncio.gather(*(one(session, f"c{i}") for i in range(20)))

    bodies = bg_loop.run(clients())
    result = proxy.tape()
    assert result.problems == ()
    assert len(result.exchanges) == 20
    assert len({e.exchange_id for e in result.exchanges}) == 20
    by_name = {json.loads(e.request_body)["name"]: e for e in result.exchanges}
    for i, body in enumerate(bodies):
        expected = b"".join(f"data: c{i}-{j}\n\n".encode() for j in range(5))
        assert body == expected
        assert by_name[f"c{i}"].body == expected
        assert by_name[f"c{i}"].outcome == "ok"


def test_methods_paths_and_query_are_forwarded_as_sent(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    seen: list[tuple[str, str]] = []

    async def upstream(request: web.Request) -> web.Response:
        seen.append((request.method, request.raw_path))
        if request.method == "HEAD":
            return web.Response(headers={"x-probe": "1"})
        return web.json_response({"path": request.raw_path})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    base = bg_loop.serve(app)
    proxy = start_proxy(base + "/base")
    targets = [
        ("GET", "/v1/models"),
        ("HEAD", "/"),
        ("POST", "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"),
        ("POST", "/anthropic/v1/messages?beta=true&x=a%2Fb+c"),
    ]

    async def client() -> list[int]:
        statuses = []
        async with aiohttp.ClientSession() as session:
            for method, target in targets:
                url = URL(proxy.url + target, encoded=True)  # sent exactly as written
                async with session.request(method, url) as response:
                    await response.read()
                    statuses.append(response.status)
        return statuses

    assert bg_loop.run(client()) == [200] * 4
    assert seen == [(m, "/base" + t) for m, t in targets]
    recorded = proxy.tape().exchanges
    assert [e.request.method for e in recorded] == [m for m, _ in targets]
    assert recorded[2].request.path == "/v1beta/models/gemini-3.8-flash:streamGenerateContent"
    assert recorded[2].request.query == (("alt", "sse"),)
    assert recorded[3].request.query == (("beta", "true"), ("x", "a/b c"))
    assert all(e.request.upstream == base + "/base" for e in recorded)


def test_the_proxy_adds_no_headers_of_its_own(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    seen: list[list[tuple[str, str]]] = []

    async def upstream(request: web.Request) -> web.Response:
        seen.append([(k.lower(), v) for k, v in request.headers.items()])
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    base = bg_loop.serve(app)
    proxy = start_proxy(base)
    port = int(proxy.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    host = base.removeprefix("http://")
    assert seen == [[("host", host), ("accept-encoding", "identity"), ("content-length", "3")]]

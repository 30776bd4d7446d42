"""The proxy embedded in a caller's own runner, as collect mode and the gateway run it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from roller.capture.tape import read_tape
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from tests.support.servers import BackgroundLoop

EVENT = b"data: {}\n\n"


def test_embedded_app_records_disconnects_and_shutdown(
    bg_loop: BackgroundLoop, tmp_path: Path
) -> None:
    never = asyncio.Event()
    upstream_saw_close = asyncio.Event()

    async def thinking(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        while not transport.is_closing():
            await asyncio.sleep(0.01)
        upstream_saw_close.set()
        return web.Response()

    async def streaming(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(EVENT)
        await never.wait()
        return response

    upstream_app = web.Application()
    upstream_app.router.add_post("/think/v1/messages", thinking)
    upstream_app.router.add_post("/stream/v1/messages", streaming)
    upstream = bg_loop.serve(upstream_app)
    server = ProxyServer(ProxyConfig(tape_dir=tmp_path / "tape", upstreams=Upstreams(upstream)))

    async def scenario() -> None:
        # The embedder's runner knows nothing of the proxy's needs.
        runner = web.AppRunner(server.app(), shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(session.post(url + "/think/v1/messages", json={}), 0.2)
            await asyncio.wait_for(upstream_saw_close.wait(), 5)
            response = await session.post(url + "/stream/v1/messages", json={})
            assert await response.content.readuntil(b"\n\n") == EVENT
            await runner.cleanup()
            response.close()

    bg_loop.run(scenario())
    never.set()
    result = read_tape(tmp_path / "tape")
    assert result.problems == ()
    assert [e.outcome for e in result.exchanges] == ["client_disconnected", "proxy_shutdown"]
    assert result.exchanges[1].body == EVENT

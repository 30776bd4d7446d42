"""An embedder's own routes (`roller.proxy.local`): answered by it before anything is
forwarded, never recorded, never counted in flight; every other target is proxied."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop


class Local:
    """Serves targets under /own/; records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.served: list[str] = []

    def serves(self, raw_path: str) -> bool:
        self.asked.append(raw_path)
        return raw_path.startswith("/own/")

    async def serve(self, request: web.Request) -> web.StreamResponse:
        self.served.append(request.raw_path)
        return web.json_response({"local": request.raw_path}, status=207)


def test_local_routes_are_answered_first_and_never_taped(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    forwarded: list[str] = []

    async def upstream(request: web.Request) -> web.Response:
        forwarded.append(request.raw_path)
        return web.json_response({"upstream": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    local = Local()
    proxy = start_proxy(bg_loop.serve(app), local=local)

    async def call(target: str) -> tuple[int, object]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + target, json={}) as response,
        ):
            return response.status, await response.json()

    assert bg_loop.run(call("/own/notes?x=1")) == (207, {"local": "/own/notes?x=1"})
    assert bg_loop.run(call("/v1/messages")) == (200, {"upstream": True})
    assert local.asked == ["/own/notes?x=1", "/v1/messages"]
    assert local.served == ["/own/notes?x=1"] and forwarded == ["/v1/messages"]
    (exchange,) = proxy.tape().exchanges  # the local route left no record
    assert exchange.request.path == "/v1/messages"
    assert proxy.server._relay is not None and proxy.server._relay.exchanges == 1

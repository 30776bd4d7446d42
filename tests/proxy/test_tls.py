"""HTTPS upstreams: verified against a configured CA; a wrong CA is a recorded 502."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme
from aiohttp import web

from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop


@pytest.fixture
def tls_upstream(bg_loop: BackgroundLoop) -> tuple[str, trustme.CA]:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: secure\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", upstream)
    return bg_loop.serve(app, ssl_context=server_context), ca


async def _post(url: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/messages", json={}) as response,
    ):
        return response.status, await response.read()


def test_https_upstream_with_its_ca_bundle(
    bg_loop: BackgroundLoop,
    start_proxy: ProxyFactory,
    tls_upstream: tuple[str, trustme.CA],
    tmp_path: Path,
) -> None:
    url, ca = tls_upstream
    assert url.startswith("https://")
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    proxy = start_proxy(url, ca_bundle=bundle)
    assert bg_loop.run(_post(proxy.url)) == (200, b"data: secure\n\n")
    exchange = proxy.only_exchange()
    assert exchange.outcome == "ok" and exchange.request.upstream == url


def test_https_upstream_with_the_wrong_ca_is_refused_and_recorded(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory, tls_upstream: tuple[str, trustme.CA]
) -> None:
    url, _ = tls_upstream
    other = ssl.create_default_context()
    other.load_verify_locations(cadata=trustme.CA().cert_pem.bytes().decode())
    proxy = start_proxy(url, ssl_context=other)
    status, body = bg_loop.run(_post(proxy.url))
    assert status == 502 and b"roller_upstream_unreachable" in body
    exchange = proxy.only_exchange()
    assert exchange.outcome == "upstream_connect_error"
    assert exchange.end.error.code == "tls_error"
    assert "certificate" in exchange.end.error.message.lower()

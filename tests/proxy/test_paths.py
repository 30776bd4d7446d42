"""Issue 15 item 6, paths: a request target with dot segments (raw or percent-encoded),
an encoded slash or backslash, or a NUL never leaves the configured base path: it is
refused 400 on its head, recorded, and never forwarded."""

from __future__ import annotations

import pytest
from aiohttp import web

from tests.proxy.conftest import ProxyFactory
from tests.support.rawhttp import send
from tests.support.servers import BackgroundLoop

UNSAFE = [
    "/v1/../v1/messages",
    "/v1/./messages",
    "/v1/%2e%2e/secret",
    "/v1/%2E%2e/secret",
    "/v1/.%2e/secret",
    "/v1/..%2fsecret",
    "/v1/..%2Fsecret",
    "/v1/a%2f..%2f..%2fsecret",
    "/v1/..%5csecret",
    "/v1/..\\secret",
    "/v1/messages%00",
    "/..",
]


@pytest.fixture
def seen_upstream(bg_loop: BackgroundLoop) -> tuple[str, list[str]]:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.raw_path)
        return web.json_response({})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return bg_loop.serve(app) + "/base", seen


@pytest.mark.parametrize("target", UNSAFE)
def test_dot_segments_never_leave_the_base_path(
    start_proxy: ProxyFactory, seen_upstream: tuple[str, list[str]], target: str
) -> None:
    upstream, seen = seen_upstream
    proxy = start_proxy(upstream)
    response = send(proxy.url, "POST", target, [("x-api-key", "sk-real")], b"{}")
    assert response.status == 400, response
    assert b"roller_bad_request" in response.body
    exchange = proxy.only_exchange()
    assert exchange.outcome == "rejected" and exchange.end.error.code == "bad_request_target"
    assert exchange.request_body == b""  # refused on its head
    assert seen == []


def test_ordinary_paths_still_pass(
    start_proxy: ProxyFactory, seen_upstream: tuple[str, list[str]]
) -> None:
    upstream, seen = seen_upstream
    proxy = start_proxy(upstream)
    for target in (
        "/v1/messages",
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1/a.b/c..d",
    ):
        assert send(proxy.url, "POST", target, [], b"{}").status == 200
    assert seen == [
        "/base/v1/messages",
        "/base/v1beta/models/gemini-2.5-flash:generateContent",
        "/base/v1/a.b/c..d",
    ]

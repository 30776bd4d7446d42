"""What reaches the tape and what reaches the upstream: secrets and roller's own headers."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from roller.capture.tape import Redaction
from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop

SECRETS = {
    "bearer": "sk-SECRET-bearer-4f1d2c",
    "x-api-key": "sk-ant-SECRET-xapikey-99",
    "goog": "AIzaSECRET-goog-7",
    "query": "SECRET-query-key-31",
    "token_query": "SECRET-access-token-8",
    "cookie": "SECRET-cookie-value-5",
    "set_cookie": "SECRET-upstream-session-6",
    "custom": "SECRET-custom-token-header-2",
}


def test_no_secret_reaches_the_tape_but_every_secret_reaches_the_upstream(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory, tmp_path: Path
) -> None:
    seen: list[CIMultiDict[str]] = []
    seen_query: list[str] = []

    async def upstream(request: web.Request) -> web.StreamResponse:
        seen.append(CIMultiDict(request.headers))
        seen_query.append(request.query_string)
        response = web.StreamResponse(
            headers={
                "content-type": "text/event-stream",
                "set-cookie": f"session={SECRETS['set_cookie']}; HttpOnly",
                "anthropic-ratelimit-tokens-remaining": "9000",
            }
        )
        await response.prepare(request)
        await response.write(b"data: {}\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    proxy = start_proxy(bg_loop.serve(app), tape_dir=tmp_path / "tape")
    target = (
        f"/v1beta/models/g:streamGenerateContent?alt=sse&key={SECRETS['query']}"
        f"&Access_Token={SECRETS['token_query']}"
    )

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            headers = {
                "Authorization": f"Bearer {SECRETS['bearer']}",
                "x-api-key": SECRETS["x-api-key"],
                "x-goog-api-key": SECRETS["goog"],
                "Cookie": f"sid={SECRETS['cookie']}",
                "X-Custom-Token": SECRETS["custom"],
                "anthropic-version": "2023-06-01",
            }
            url = URL(proxy.url + target, encoded=True)
            async with session.post(url, json={"q": 1}, headers=headers) as response:
                assert response.status == 200
                assert SECRETS["set_cookie"] in response.headers["set-cookie"]
                await response.read()

    bg_loop.run(client())
    exchange = proxy.only_exchange()
    # The upstream got the caller's credentials: redaction is for the record only.
    (headers,) = seen
    assert headers["authorization"] == f"Bearer {SECRETS['bearer']}"
    assert headers["x-api-key"] == SECRETS["x-api-key"]
    assert SECRETS["query"] in seen_query[0]
    # Not one secret byte anywhere under the tape directory.
    proxy.loop.run(proxy.server.stop())  # closes the tape: every byte is on disk
    for path in (tmp_path / "tape").rglob("*"):
        data = path.read_bytes()
        for name, secret in SECRETS.items():
            assert secret.encode() not in data, f"{name} leaked into {path.name}"
    assert exchange.request.redacted == Redaction(
        headers=("authorization", "x-api-key", "x-goog-api-key", "cookie", "x-custom-token"),
        query=("key", "Access_Token"),
    )
    assert exchange.request.query == (("alt", "sse"),)
    assert exchange.response.redacted_headers == ("set-cookie",)
    kept = {k.lower(): v for k, v in exchange.response.headers}
    assert kept["anthropic-ratelimit-tokens-remaining"] == "9000"  # "tokens" is not "token"
    assert {k.lower(): v for k, v in exchange.request.headers}["anthropic-version"] == (
        "2023-06-01"
    )


def test_roller_headers_are_removed_upstream_and_recorded_as_evidence(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    seen: list[list[tuple[str, str]]] = []

    async def upstream(request: web.Request) -> web.Response:
        seen.append(list(request.headers.items()))
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/v1/responses", upstream)
    proxy = start_proxy(bg_loop.serve(app))
    native = {
        "thread-id": "019a-thread",
        "session-id": "019a-session",
        "x-codex-parent-thread-id": "019a-parent",
        "x-claude-code-session-id": "cc-session",
        "x-session-id": "ses_1",
    }

    async def client() -> None:
        async with aiohttp.ClientSession() as session:
            headers = {
                **native,
                "X-Roller-Sample": "sample-7",
                "x-roller-attempt": "attempt-0001",
                "x-roller-participant": "p-root",
            }
            async with session.post(proxy.url + "/v1/responses", json={}, headers=headers) as r:
                assert r.status == 200

    bg_loop.run(client())
    (received,) = seen
    names = [k.lower() for k, _ in received]
    assert not [n for n in names if n.startswith("x-roller-")]
    for name, value in native.items():
        assert (name, value) in [(k.lower(), v) for k, v in received]
    exchange = proxy.only_exchange()
    assert exchange.request.roller == {
        "x-roller-sample": "sample-7",
        "x-roller-attempt": "attempt-0001",
        "x-roller-participant": "p-root",
    }
    recorded = [k.lower() for k, _ in exchange.request.headers]
    assert not [n for n in recorded if n.startswith("x-roller-")]
    assert {"thread-id", "session-id", "x-codex-parent-thread-id"} <= set(recorded)

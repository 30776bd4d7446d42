"""The baseline for the proxy benchmark: a bare aiohttp pass-through that records nothing.

It does what `roller proxy` does on the wire and nothing else: read the request body
whole, forward it with the end-to-end headers to one upstream over a pooled keep-alive
client (`auto_decompress=False`, no automatic headers), and relay the response body piece
by piece as it arrives (`readany`). No tape, no redaction, no identity evidence, no
policy, no failure bookkeeping. The difference between it and a direct call is the cost
of any aiohttp hop.

Two upstream clients (`--client`): `session` (default), aiohttp's `ClientSession` — the
bare hop issue 16 measures `roller proxy` against; `pool`, roller's own client
(`roller.proxy.upstream.UpstreamClient`, the one `roller proxy` uses), so that the
difference between this hop and `roller proxy` is the cost of recording alone.

Run: `python benchmarks/bare_proxy.py --listen 127.0.0.1:0 --upstream URL [--client pool]`;
prints `bare proxy: listening on URL` and serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import ssl
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import hdrs, web
from yarl import URL

from roller.proxy.upstream import UpstreamClient, UpstreamResponse

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
    }
)
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "expect"}
_SESSION_KEY = web.AppKey("session", aiohttp.ClientSession)
_POOL_KEY = web.AppKey("pool", UpstreamClient)


async def _relayed(
    request: web.Request, upstream_response: aiohttp.ClientResponse | UpstreamResponse
) -> web.StreamResponse:
    """The upstream's response relayed to the client piece by piece."""
    headers = upstream_response.headers.items()
    response = web.StreamResponse(
        status=upstream_response.status,
        reason=upstream_response.reason,
        headers=[(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP],
    )
    await response.prepare(request)
    while data := await upstream_response.content.readany():
        await response.write(data)
    await response.write_eof()
    return response


def make_app(upstream: str) -> web.Application:
    app = web.Application(client_max_size=256 * 1024 * 1024)

    async def session_lifecycle(app: web.Application) -> AsyncIterator[None]:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        app[_SESSION_KEY] = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=(hdrs.USER_AGENT, hdrs.ACCEPT, hdrs.CONTENT_TYPE),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        yield
        await app[_SESSION_KEY].close()

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
        async with request.app[_SESSION_KEY].request(
            request.method,
            upstream + request.raw_path,
            headers=headers,
            data=body or None,
            allow_redirects=False,
        ) as upstream_response:
            return await _relayed(request, upstream_response)

    app.cleanup_ctx.append(session_lifecycle)
    app.router.add_route("*", "/{tail:.*}", relay)
    return app


def make_pool_app(upstream: str) -> web.Application:
    """The same hop over roller's own upstream client."""
    app = web.Application(client_max_size=256 * 1024 * 1024)

    async def pool_lifecycle(app: web.Application) -> AsyncIterator[None]:
        app[_POOL_KEY] = UpstreamClient(
            ssl_context=ssl.create_default_context(), connect_timeout=10, read_timeout=None
        )
        yield
        await app[_POOL_KEY].close()

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
        url = URL(upstream + request.raw_path, encoded=True)
        upstream_response = await request.app[_POOL_KEY].send(request.method, url, headers, body)
        try:
            response = await _relayed(request, upstream_response)
        except BaseException:
            upstream_response.close()
            raise
        upstream_response.release()
        return response

    app.cleanup_ctx.append(pool_lifecycle)
    app.router.add_route("*", "/{tail:.*}", relay)
    return app


async def serve(host: str, port: int, upstream: str, client: str) -> None:
    make = make_pool_app if client == "pool" else make_app
    runner = web.AppRunner(make(upstream.rstrip("/")), handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"bare proxy: listening on http://{host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT")
    parser.add_argument("--upstream", required=True, metavar="URL")
    parser.add_argument(
        "--client",
        choices=("session", "pool"),
        default="session",
        help="aiohttp's ClientSession (default) or roller's own upstream client",
    )
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    asyncio.run(serve(host, int(port), args.upstream, args.client))


if __name__ == "__main__":
    main()

"""A model upstream that fails on request: the soak suite's fault injector (a process).

`python -m tests.soak.upstream KEY` serves OpenAI-style `/v1/chat/completions` on
127.0.0.1 (port printed as the first stdout line) and does to each request what its
`x-soak-fault` header asks (`FAULTS` in `tests.soak.load` says what each is for):

- `ok`, `big`, `malformed`, `utf8_request`, `unauth`: a normal answer — a short SSE
  stream, or JSON when the body is not JSON (400) or not a stream request;
- `client_gone`: the same, but a stream of 10 s, so the client always leaves before it
  ends;
- `reset`: a few SSE events, then the TCP connection is cut (no terminating chunk);
- `s429`, `s500`, `s529`: that status with a JSON error body;
- `slow`: the head after a pause, then events far apart;
- `utf8`: an SSE stream whose bytes hold an invalid UTF-8 sequence split across two
  chunks.

It counts the requests whose credential was not `KEY` (the gateway swaps its token for
the real key; the proxy passes the client's own) and answers `GET /soak/stats` with the
count, so a test can tell that every request carried the right key.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from aiohttp import web

_EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'
_DONE = b"data: [DONE]\n\n"
_STATS = web.AppKey("soak_stats", dict)
_KEY = web.AppKey("soak_key", str)


def _sse_response() -> web.StreamResponse:
    return web.StreamResponse(status=200, headers={"content-type": "text/event-stream"})


async def _stream(
    request: web.Request, events: int, gap: float, parts: list[bytes] | None = None
) -> web.StreamResponse:
    response = _sse_response()
    await response.prepare(request)
    try:
        for part in parts or ():
            await response.write(part)
            await asyncio.sleep(gap)
        for _ in range(events):
            await response.write(_EVENT)
            await asyncio.sleep(gap)
        await response.write(_DONE)
        await response.write_eof()
    except ConnectionError:  # the proxy closed this stream: its client left
        pass
    return response


async def _reset(request: web.Request) -> web.StreamResponse:
    response = _sse_response()
    await response.prepare(request)
    for _ in range(3):
        await response.write(_EVENT)
    await asyncio.sleep(0.01)
    transport = request.transport
    assert transport is not None
    transport.abort()  # RST: the stream never ends
    return response


async def chat(request: web.Request) -> web.StreamResponse:
    fault = request.headers.get("x-soak-fault", "ok")
    stats: dict[str, int] = request.app[_STATS]
    key = request.app[_KEY]
    if request.headers.get("authorization") != f"Bearer {key}":
        stats["wrong_key"] += 1
    body = await request.read()  # a 20 MB body is read whole, as a real upstream would
    stats["requests"] += 1
    if fault in ("s429", "s500", "s529"):
        status = int(fault[1:])
        error = {"error": {"type": "soak", "message": f"injected {status}"}}
        return web.json_response(error, status=status)
    if fault == "reset":
        return await _reset(request)
    if fault == "slow":
        await asyncio.sleep(0.8)
        return await _stream(request, 4, 0.3)
    if fault == "utf8":
        # "€" is e2 82 ac: the split sequence e2 82 | 28 is invalid across the boundary.
        return await _stream(request, 2, 0.01, [b'data: {"x":"\xe2\x82', b'\x28"}\n\n'])
    try:
        parsed: Any = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return web.json_response({"error": {"type": "invalid_request"}}, status=400)
    if not isinstance(parsed, dict) or not parsed.get("stream"):
        return web.json_response({"choices": [{"message": {"content": "ok"}}], "n": len(body)})
    if fault == "client_gone":
        # Long enough (10 s) that the client always leaves first, however starved the
        # load generator is: a stream that could end before it left would rightly be `ok`.
        return await _stream(request, 500, 0.02)
    return await _stream(request, 6, 0.005)


async def stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[_STATS])


async def main(key: str) -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[_KEY] = key
    app[_STATS] = {"requests": 0, "wrong_key": 0}
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/soak/stats", stats)
    runner = web.AppRunner(app, handle_signals=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    print(f"http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

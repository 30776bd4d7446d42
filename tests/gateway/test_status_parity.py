"""The gateway's call row and the finalized call give the same statuses for the same
recorded exchange, in every way the proxy tests end one.

One gateway (SQLite) in front of a fake upstream that misbehaves on request (header
`x-mode`, forwarded untouched), a dead port and a missing upstream. Each scenario sends
one request; then every tape exchange is decoded exactly as finalize decodes it
(`roller.finalize.decode.decode_exchange`) and its execution and response-capture
statuses must equal its call row's — and the statuses each scenario expects
(docs/protocol.md, "Statuses"), so agreement on a wrong answer fails too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

import roller.gateway.server as gateway_server
from roller.capture.tape import OUTCOMES, read_tape
from roller.finalize.decode import decode_exchange
from roller.gateway.config import parse_config
from roller.gateway.server import Gateway
from roller.gateway.store import SessionStore, open_engine
from roller.gateway.tokens import new_token, token_sha256
from roller.proxy import ProxyConfig
from roller.wire.sse import encode_event
from roller.wire.types import SSEEvent
from tests.support.servers import BackgroundLoop, free_port

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "usage": {"input_tokens": 1, "output_tokens": 0},
}
EVENTS = [
    {"type": "message_start", "message": MESSAGE},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
    {"type": "message_stop"},
]
SSE = [encode_event(SSEEvent(json.dumps(e), event=e["type"])) for e in EVENTS]
WHOLE = {**MESSAGE, "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}
ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "later"}}
READ_TIMEOUT = 0.4


async def _stream(request: web.Request, events: list[bytes], *, pause: float = 0.0) -> Any:
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    for event in events:
        await response.write(event)
        if pause:
            await asyncio.sleep(pause)
    return response


async def _upstream(never: asyncio.Event, request: web.Request) -> web.StreamResponse:
    await request.read()
    mode = request.headers.get("x-mode", "complete")
    transport = request.transport
    assert transport is not None
    if mode == "complete":
        return await _stream(request, SSE)
    if mode == "no_terminal":  # a clean end of body without `message_stop`
        return await _stream(request, SSE[:-1])
    if mode in ("400", "529"):
        return web.json_response(ERROR, status=int(mode))
    if mode == "gzip_json":
        body = gzip.compress(json.dumps(WHOLE).encode())
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return web.Response(body=body, headers=headers)
    if mode == "models":
        return web.json_response({"object": "list", "data": []})
    if mode == "close_before_head":
        transport.abort()
        return web.Response()
    if mode == "die_mid_body":
        response = await _stream(request, SSE[:2])
        await asyncio.sleep(0.05)
        transport.abort()
        return response
    if mode in ("stall_before_head", "think"):
        await never.wait()
        return web.Response()
    if mode == "stall_mid_body":
        response = await _stream(request, SSE[:2])
        await never.wait()
        return response
    if mode == "slow":  # keeps streaming until dropped
        response = await _stream(request, SSE[:2])
        with contextlib.suppress(ConnectionError):  # until the proxy drops the connection
            for _ in range(500):
                await asyncio.sleep(0.01)
                await response.write(b": ping\n\n")
        return response
    if mode == "linger":  # the whole stream, then a pause before the body ends
        response = await _stream(request, SSE)
        await asyncio.sleep(1.0)
        return response
    raise AssertionError(mode)


async def _read_all(response: aiohttp.ClientResponse) -> None:
    with contextlib.suppress(aiohttp.ClientPayloadError):  # a cut body is the scenario
        await response.read()


async def _leave_after(response: aiohttp.ClientResponse, marker: bytes) -> None:
    received = b""
    while marker not in received:
        received += await response.content.readany()
    response.close()


Client = Callable[[aiohttp.ClientResponse], Awaitable[None]]
# name -> (method, path, x-mode, how the client reads, expected (execution, capture))
SCENARIOS: dict[str, tuple[str, str, str, Client, tuple[str, str]]] = {
    "complete stream": ("POST", "/v1/messages", "complete", _read_all, ("completed", "complete")),
    "no terminal event": (
        "POST",
        "/v1/messages",
        "no_terminal",
        _read_all,
        ("failed", "complete"),
    ),
    "upstream 4xx": ("POST", "/v1/messages", "400", _read_all, ("failed", "complete")),
    "upstream 5xx": ("POST", "/v1/messages", "529", _read_all, ("failed", "complete")),
    "gzip JSON body": ("POST", "/v1/messages", "gzip_json", _read_all, ("completed", "complete")),
    "side request": ("GET", "/v1/models", "models", _read_all, ("completed", "complete")),
    "upstream down": ("POST", "/v1/chat/completions", "-", _read_all, ("failed", "missing")),
    "upstream closes before the head": (
        "POST",
        "/v1/messages",
        "close_before_head",
        _read_all,
        ("failed", "missing"),
    ),
    "upstream dies mid-body": (
        "POST",
        "/v1/messages",
        "die_mid_body",
        _read_all,
        ("failed", "partial"),
    ),
    "timeout before the head": (
        "POST",
        "/v1/messages",
        "stall_before_head",
        _read_all,
        ("failed", "missing"),
    ),
    "timeout mid-body": (
        "POST",
        "/v1/messages",
        "stall_mid_body",
        _read_all,
        ("failed", "partial"),
    ),
    "client gone mid-stream": (
        "POST",
        "/v1/messages",
        "slow",
        functools.partial(_leave_after, marker=b"content_block_start"),
        ("interrupted", "partial"),
    ),
    "client gone after the whole stream": (
        "POST",
        "/v1/messages",
        "linger",
        functools.partial(_leave_after, marker=b"message_stop"),
        ("completed", "complete"),
    ),
    "no upstream": (
        "POST",
        "/v1beta/models/g:generateContent",
        "complete",
        _read_all,
        ("failed", "missing"),
    ),
}


async def _send(url: str, method: str, mode: str, token: str, client: Client) -> None:
    headers = {"x-api-key": token, "x-mode": mode, "content-type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=b'{"model": "m", "stream": true}', headers=headers) as r,
    ):
        await client(r)


async def _client_gone_while_thinking(url: str, token: str) -> None:
    async with aiohttp.ClientSession() as session:
        headers = {"x-api-key": token, "x-mode": "think"}
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(
                session.post(url + "/v1/messages", data=b"{}", headers=headers), 0.2
            )
    await asyncio.sleep(0.2)


async def _shutdown_mid_stream(gateway: Gateway, url: str, token: str) -> None:
    session = aiohttp.ClientSession()
    headers = {"x-api-key": token, "x-mode": "slow"}
    response = await session.post(url + "/v1/messages", data=b"{}", headers=headers)
    await response.content.readuntil(b"\n\n")
    await gateway.stop(grace=0.1)
    response.close()
    await session.close()


def test_gateway_rows_and_finalize_agree_on_every_ending(
    bg_loop: BackgroundLoop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    never = asyncio.Event()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", functools.partial(_upstream, never))
    upstream = bg_loop.serve(app)
    monkeypatch.setattr(
        gateway_server, "ProxyConfig", functools.partial(ProxyConfig, read_timeout=READ_TIMEOUT)
    )
    token = new_token()
    config = parse_config(
        {
            "upstreams": {
                "anthropic": {"url": upstream},
                "openai": {"url": f"http://127.0.0.1:{free_port()}"},  # nothing listens
            },
            "clients": [
                {
                    "token_sha256": token_sha256(token),
                    "principal": "p",
                    "account": "a",
                    "harness": "claude-code",
                }
            ],
        },
        base=tmp_path,
    )
    db = f"sqlite:///{tmp_path / 'gw.db'}"
    gateway = Gateway(config, db_url=db, tape_dir=tmp_path / "tape", environ={})
    url = bg_loop.run(gateway.start())
    expected: dict[tuple[str, str], tuple[str, str]] = {}
    try:
        for method, path, mode, client, statuses in SCENARIOS.values():
            bg_loop.run(_send(url + path, method, mode, token, client))
            expected[(path, mode)] = statuses
        bg_loop.run(_send(url + "/v1/messages", "POST", "complete", "rlr_wrong", _read_all))
        bg_loop.run(_client_gone_while_thinking(url, token))
        assert bg_loop.run(gateway.idle(10))
        bg_loop.run(_shutdown_mid_stream(gateway, url, token))
    finally:
        never.set()
        bg_loop.run(gateway.stop(grace=0.1))
    store = SessionStore(open_engine(db))
    try:
        rows = {row.exchange_id: row for row in store.calls()}
    finally:
        store.close()

    exchanges = read_tape(tmp_path / "tape").exchanges
    outcomes = [ex.outcome for ex in exchanges]
    assert len(exchanges) == len(rows) == len(SCENARIOS) + 3, outcomes
    seen: dict[str, tuple[str, str]] = {}
    for sequence, exchange in enumerate(exchanges):
        decoded = decode_exchange(sequence, exchange, "claude-code")
        row = rows[exchange.exchange_id]
        finalized = (decoded.execution_status, decoded.response_capture_status)
        assert (row.execution_status, row.response_capture_status) == finalized, (
            exchange.outcome,
            exchange.request.path,
        )
        seen[str(exchange.outcome)] = finalized
        mode = next((v for k, v in exchange.request.headers if k.lower() == "x-mode"), "")
        key = (exchange.request.path, mode)
        if key in expected and exchange.outcome not in ("rejected", "proxy_shutdown"):
            assert finalized == expected[key], key
    # The endings outside SCENARIOS, and every outcome the proxy can record.
    assert seen["rejected"] == ("failed", "missing")
    assert seen["proxy_shutdown"] == ("interrupted", "partial")
    # proxy_error (a policy that raised, a proxy bug) cannot be provoked from outside.
    assert set(seen) == set(OUTCOMES) - {"proxy_error"}
    thinking = [ex for ex in exchanges if ex.outcome == "client_disconnected" and not ex.response]
    assert [rows[ex.exchange_id].execution_status for ex in thinking] == ["interrupted"]

"""Every consumer of the endpoint table agrees with it, over real sockets where it serves.

For one request per row (tests/wire/test_endpoints.py `EXAMPLES`), a wrong method, and a
path no row claims: the proxy sends it to its family's upstream (or the default), the
gateway annotates the same family and model and writes the table's protocol in its call
row, finalize records the table's kind and protocol, and the mock answers what the row's
kind says (404 for rows it does not serve, 405 for a wrong method) in the row's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from roller.capture.tape import EndMeta, RequestMeta, TapeExchange, read_tape
from roller.finalize.decode import decode_exchange
from roller.gateway.config import parse_config
from roller.gateway.server import Gateway
from roller.gateway.tokens import new_token, token_sha256
from roller.mock import MockModel, load_scenario
from roller.mock.endpoints import ACTIONS, error_protocol
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from roller.wire import codec_for
from roller.wire.endpoints import FAMILIES, Endpoint, endpoint_for
from tests.support.servers import BackgroundLoop
from tests.wire.test_endpoints import EXAMPLES

CASES: list[tuple[str, str]] = [(m, p) for m, p, _ in EXAMPLES.values()] + [
    ("GET", "/v1/messages"),  # a wrong method
    ("GET", "/v1beta/models/m:streamGenerateContent?alt=sse"),
    ("POST", "/api/show"),  # no row
]


def _split(target: str) -> tuple[str, list[tuple[str, str]]]:
    path, _, query = target.partition("?")
    pairs = [tuple(p.split("=", 1)) for p in query.split("&")] if query else []
    return path, [(k, v) for k, v in pairs]


def _marker_app(name: str) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"upstream": name})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    return app


async def _send(url: str, method: str, headers: dict[str, str] | None = None) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=b"{}", headers=headers or {}) as response,
    ):
        await response.read()
        return response.status


def test_the_proxy_routes_each_row_to_its_family(bg_loop: BackgroundLoop, tmp_path: Path) -> None:
    urls = {name: bg_loop.serve(_marker_app(name)) for name in ("default", *FAMILIES)}
    server = ProxyServer(ProxyConfig(tape_dir=tmp_path / "tape", upstreams=Upstreams(**urls)))
    proxy = bg_loop.run(server.start())
    try:
        for method, target in CASES:
            assert bg_loop.run(_send(proxy + target, method)) == 200
        assert bg_loop.run(server.wait_idle(5))
    finally:
        bg_loop.run(server.stop(grace=1.0))
    exchanges = read_tape(tmp_path / "tape").exchanges
    assert len(exchanges) == len(CASES)
    for (method, target), exchange in zip(CASES, exchanges, strict=True):
        family = endpoint_for(method, target).family
        assert exchange.request.upstream == urls[family or "default"], target
        assert json.loads(exchange.body) == {"upstream": family or "default"}


def _exchange(method: str, target: str) -> TapeExchange:
    path, query = _split(target)
    return TapeExchange(
        exchange_id="tape-000001:1",
        request=RequestMeta(method=method, path=path, query=tuple(query)),
        request_time_ns=0,
        request_body=b'{"model": "body-model", "stream": true}',
        response=None,
        response_time_ns=None,
        chunks=(),
        end=EndMeta(outcome="upstream_connect_error"),
        end_time_ns=1,
    )


@pytest.mark.parametrize(("method", "target"), CASES)
def test_finalize_records_the_rows_kind_and_protocol(method: str, target: str) -> None:
    path, query = _split(target)
    endpoint = endpoint_for(method, path, query)
    decoded = decode_exchange(1, _exchange(method, target), "generic")
    assert (decoded.kind, decoded.protocol) == (endpoint.record_kind, endpoint.output_protocol)
    if endpoint.output_protocol is None:
        assert decoded.model is None and not decoded.request_stream
        return
    codec = codec_for(endpoint.output_protocol)
    body = {"model": "body-model", "stream": True}
    assert decoded.model == codec.request_model(body, endpoint)
    assert decoded.request_stream == codec.is_streaming_request(body, endpoint)
    if endpoint.protocol == "gemini":  # the model and stream flag are the path's
        assert (decoded.model, decoded.request_stream) == (endpoint.model, endpoint.stream)


def test_the_gateway_annotates_the_rows_family_and_model(
    bg_loop: BackgroundLoop, tmp_path: Path
) -> None:
    urls = {family: bg_loop.serve(_marker_app(family)) for family in FAMILIES}
    token = new_token()
    config = parse_config(
        {
            "upstreams": {family: {"url": url} for family, url in urls.items()},
            "clients": [
                {
                    "token_sha256": token_sha256(token),
                    "principal": "p",
                    "account": "a",
                    "harness": "generic",
                }
            ],
        },
        base=tmp_path,
    )
    gateway = Gateway(
        config, db_url=f"sqlite:///{tmp_path / 'gw.db'}", tape_dir=tmp_path / "tape", environ={}
    )
    url = bg_loop.run(gateway.start())
    try:
        # A bearer token: a path without a family falls back to the key's family (openai).
        auth = {"authorization": f"Bearer {token}"}
        for method, target in CASES:
            assert bg_loop.run(_send(url + target, method, auth)) == 200, target
        assert bg_loop.run(gateway.idle(10))  # rows committed by the background writer
        assert gateway.store is not None
        rows = gateway.store.calls()
    finally:
        bg_loop.run(gateway.stop(grace=1.0))
    exchanges = read_tape(tmp_path / "tape").exchanges
    assert len(rows) == len(exchanges) == len(CASES)
    by_exchange = {row.exchange_id: row for row in rows}
    for (method, target), exchange in zip(CASES, exchanges, strict=True):
        endpoint = endpoint_for(method, target)
        note = exchange.request.annotations["gateway"]
        family = endpoint.family or "openai"
        assert note["family"] == family and exchange.request.upstream == urls[family], target
        row = by_exchange[exchange.exchange_id]
        assert (row.family, row.protocol) == (family, endpoint.output_protocol), target
        # The body names no model (it is `{}`): the model is the one the path names.
        assert note["model"] == row.model == endpoint.model, target


def _expected_status(endpoint: Endpoint) -> set[int]:
    if endpoint.route is None or endpoint.route.kind not in ACTIONS:
        return {404}
    if not endpoint.method_allowed:
        return {405}
    if endpoint.route.kind in ("model_list", "model_info"):
        return {200}
    return {400}  # `{}` is no request of the protocol: its dialect read it and refused it


def test_the_mock_answers_what_each_row_says(bg_loop: BackgroundLoop) -> None:
    mock = MockModel(load_scenario("spawn-one"))
    running = bg_loop.run(mock.serve("127.0.0.1", 0))
    try:
        for method, target in CASES:
            endpoint = endpoint_for(method, target)
            status = bg_loop.run(_send(running.url + target, method))
            assert status in _expected_status(endpoint), (method, target, status)
            served = mock.served[-1]
            if status != 200:
                assert served.protocol == error_protocol(endpoint, {}), target
    finally:
        bg_loop.run(running.close())

"""The gateway hooks: a request policy that admits or refuses on the head, then rejects,
rewrites, routes and annotates once the body arrived, and the end hook that sees every
exchange's outcome."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from roller.capture.tape import Redaction
from roller.proxy import Admission, ExchangeEnd, PolicyDecision, Rejection, RequestHead
from tests.proxy.conftest import ProxyFactory
from tests.support.servers import BackgroundLoop, free_port


class GatewayPolicy:
    """Authenticates callers by a gateway token and swaps in the real upstream key."""

    def __init__(self, special_upstream: str) -> None:
        self.special_upstream = special_upstream
        self.heads: list[RequestHead] = []
        self.decided: list[bytes] = []

    async def admit(self, head: RequestHead) -> Admission:
        self.heads.append(head)
        token = head.headers.get("authorization", "")
        if token != "Bearer gw-token":
            return Admission(
                reject=Rejection(401, {"error": {"type": "gateway_auth", "message": "bad token"}}),
                annotations={"caller": None},
            )
        return Admission(annotations={"caller": "unknown yet"}, context=token)

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision:
        assert admission.context == "Bearer gw-token"  # what admit handed itself
        self.decided.append(head.body)
        if head.headers.get("x-roller-explode"):
            raise RuntimeError("policy bug")
        return PolicyDecision(
            set_headers={"x-api-key": "sk-REAL-upstream-key"},
            remove_headers=("authorization",),
            upstream=self.special_upstream if "special" in head.path else None,
            annotations={"caller": "team-a", "sample": head.headers.get("x-roller-sample")},
        )


def test_policy_rejects_rewrites_routes_and_annotates(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory, tmp_path: Path
) -> None:
    seen: dict[str, list[dict[str, str]]] = {"default": [], "special": []}

    def upstream_app(name: str) -> web.Application:
        async def handler(request: web.Request) -> web.Response:
            seen[name].append({k.lower(): v for k, v in request.headers.items()})
            return web.json_response({"upstream": name})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        return app

    default, special = (
        bg_loop.serve(upstream_app("default")),
        bg_loop.serve(upstream_app("special")),
    )
    ends: list[ExchangeEnd] = []

    def on_end(end: ExchangeEnd) -> None:
        ends.append(end)

    policy = GatewayPolicy(special)
    proxy = start_proxy(default, policy=policy, on_exchange_end=on_end, tape_dir=tmp_path / "t")

    async def call(path: str, token: str, **extra: str) -> tuple[int, object]:
        headers = {"authorization": f"Bearer {token}", "x-roller-sample": "s1", **extra}
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + path, json={}, headers=headers) as response,
        ):
            return response.status, await response.json()

    assert bg_loop.run(call("/v1/messages", "wrong")) == (
        401,
        {"error": {"type": "gateway_auth", "message": "bad token"}},
    )
    assert bg_loop.run(call("/v1/messages", "gw-token")) == (200, {"upstream": "default"})
    assert bg_loop.run(call("/special/v1/messages", "gw-token")) == (200, {"upstream": "special"})
    status, body = bg_loop.run(call("/v1/messages", "gw-token", **{"x-roller-explode": "1"}))
    assert status == 500 and body["error"]["type"] == "roller_policy_error"  # type: ignore[index]

    # The policy saw the request as received, roller headers and auth included; the
    # refused one only by its head: its body was never read, nor decided on.
    assert policy.heads[0].headers["x-roller-sample"] == "s1" and policy.heads[0].body == b""
    # ... and its headers as the proxy read them once: the same pairs, in arrival order.
    for head in policy.heads:
        assert list(head.pairs) == list(head.headers.items())
        assert head.names == tuple(name for name, _ in head.headers.items())
    assert policy.decided == [b"{}"] * 3
    # The upstreams got the swapped key and never the gateway token.
    for got in seen["default"] + seen["special"]:
        assert got["x-api-key"] == "sk-REAL-upstream-key"
        assert "authorization" not in got and "x-roller-sample" not in got
    assert len(seen["default"]) == len(seen["special"]) == 1

    assert bg_loop.run(proxy.server.wait_idle(5))
    rejected, ok, routed, exploded = proxy.tape().exchanges
    assert rejected.outcome == "rejected" and rejected.end.client_status == 401
    assert rejected.end.client_body["error"]["type"] == "gateway_auth"
    assert rejected.request_body == b"" and rejected.end.request_bytes == 0
    assert rejected.request.annotations == {"caller": None}
    assert ok.request.annotations == {"caller": "team-a", "sample": "s1"}
    assert routed.request.upstream == special
    assert exploded.outcome == "proxy_error" and exploded.end.error.code == "policy_error"
    assert [e.outcome for e in ends] == ["rejected", "ok", "ok", "proxy_error"]
    assert ends[1].annotations == {"caller": "team-a", "sample": "s1"}
    assert ends[1].roller == {"x-roller-sample": "s1"}
    assert ends[1].exchange_id == ok.exchange_id and ends[1].upstream_status == 200
    # Neither the swapped-in key nor the gateway token is on disk.
    bg_loop.run(proxy.server.stop())
    for path in (tmp_path / "t").rglob("*"):
        assert b"sk-REAL-upstream-key" not in path.read_bytes()
        assert b"gw-token" not in path.read_bytes()


def test_end_hook_runs_for_failures_and_its_errors_are_counted(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory, caplog: pytest.LogCaptureFixture
) -> None:
    ends: list[ExchangeEnd] = []

    def on_end(end: ExchangeEnd) -> None:
        ends.append(end)
        raise ValueError("database down")

    proxy = start_proxy(f"http://127.0.0.1:{free_port()}", on_exchange_end=on_end)

    async def call() -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + "/v1/messages", json={}) as response,
        ):
            return response.status

    assert bg_loop.run(call()) == 502
    assert bg_loop.run(proxy.server.wait_idle(5))
    (end,) = ends
    assert end.outcome == "upstream_connect_error" and end.client_status == 502
    assert end.error is not None and end.error.code == "connect_failed"
    relay = proxy.server.relay
    assert relay is not None and relay.hook_errors == 1
    exchange = proxy.only_exchange()
    assert json.loads(json.dumps(exchange.end.to_json()))["outcome"] == end.outcome
    # the error's message is on the exchange's record; the log names its type only (a
    # message may quote what the hook read)
    noted = exchange.request.annotations["end_hook_error"]
    assert noted == {"code": "ValueError", "message": "database down"}
    logged = [r.getMessage() for r in caplog.records if "on_exchange_end" in r.getMessage()]
    assert logged == [f"on_exchange_end hook failed for exchange {end.exchange_id}: ValueError"]
    assert "database down" not in caplog.text


class BodyPolicy:
    """Decides from the body (a gateway keys sessions on body-level conversation ids) and
    drops a gateway token sent as `?key=` before forwarding."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def admit(self, head: RequestHead) -> Admission:
        return Admission()

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision:
        self.bodies.append(head.body)
        conversation = json.loads(head.body).get("prompt_cache_key")
        return PolicyDecision(remove_query=("KEY",), annotations={"conversation": conversation})


def test_policy_sees_the_body_and_removes_query_parameters(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    targets: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        targets.append(request.raw_path)
        return web.json_response({})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    policy = BodyPolicy()
    proxy = start_proxy(bg_loop.serve(app), policy=policy)

    async def call() -> int:
        url = proxy.url + "/v1beta/models/m:generateContent?alt=sse&key=gw-token&x=%2F1"
        async with (
            aiohttp.ClientSession() as session,
            session.post(URL(url, encoded=True), json={"prompt_cache_key": "conv-1"}) as response,
        ):
            return response.status

    assert bg_loop.run(call()) == 200
    assert policy.bodies == [b'{"prompt_cache_key": "conv-1"}']
    # The named parameter is gone upstream; the rest of the target is byte-exact.
    assert targets == ["/v1beta/models/m:generateContent?alt=sse&x=%2F1"]
    exchange = proxy.only_exchange()
    assert exchange.request.annotations == {"conversation": "conv-1"}
    assert exchange.request_body == b'{"prompt_cache_key": "conv-1"}'
    assert ("alt", "sse") in exchange.request.query
    assert exchange.request.redacted.query == ("key",)


def test_a_body_that_never_arrives_whole_is_recorded_with_its_head(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    policy = BodyPolicy()
    proxy = start_proxy("http://127.0.0.1:9", policy=policy, max_request_body=10)

    async def call() -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                proxy.url + "/v1/messages?key=secret",
                data=b"x" * 100,
                headers={"x-api-key": "gw", "x-custom": "kept"},
            ) as response,
        ):
            return response.status

    assert bg_loop.run(call()) == 413
    assert policy.bodies == []  # the policy never decided on a partial body
    exchange = proxy.only_exchange()
    assert ("x-custom", "kept") in exchange.request.headers
    assert exchange.request.redacted == Redaction(headers=("x-api-key",), query=("key",))
    assert exchange.request.annotations == {}
    assert exchange.outcome == "rejected"


def test_end_hook_is_a_plain_call_inside_the_exchange_also_when_the_client_leaves(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    """The hook runs in place, once, before its exchange stops being in flight: for an
    exchange that completed and for one whose handler is cancelled (its client left)."""
    released = asyncio.Event()

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: 1\n\n")
        if request.path == "/leave":
            await released.wait()  # the client goes away while the stream is open
        await response.write(b"data: 2\n\n")
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    seen: list[tuple[str, int, bool]] = []

    def on_end(end: ExchangeEnd) -> None:
        # Inside the exchange: still in flight, in the handler's own task.
        relay = proxy.server.relay
        assert relay is not None
        task = asyncio.current_task()
        seen.append((end.outcome, relay.in_flight, task is not None and task.cancelling() > 0))

    proxy = start_proxy(bg_loop.serve(app), on_exchange_end=on_end)

    async def call(path: str, leave: bool) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + path, json={}) as response,
        ):
            if leave:
                await response.content.readuntil(b"\n\n")
                response.close()  # cancels the proxy's handler mid-stream
                return
            await response.read()

    bg_loop.run(call("/done", leave=False))
    bg_loop.run(call("/leave", leave=True))
    assert bg_loop.run(proxy.server.wait_idle(5))
    bg_loop.loop.call_soon_threadsafe(released.set)
    assert seen == [("ok", 1, False), ("client_disconnected", 1, True)]
    done, left = proxy.tape().exchanges
    assert (done.outcome, left.outcome) == ("ok", "client_disconnected")


class KeepPolicy:
    """Asks for the response body of paths under /keep/ only."""

    async def admit(self, head: RequestHead) -> Admission:
        return Admission()

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision:
        return PolicyDecision(keep_response=head.path.startswith("/keep/"))


def test_end_hook_gets_the_response_body_only_when_the_policy_asks(
    bg_loop: BackgroundLoop, start_proxy: ProxyFactory
) -> None:
    parts = [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]

    async def upstream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream", "set-cookie": "s=secret"}
        )
        await response.prepare(request)
        for part in parts:
            await response.write(part)
            await asyncio.sleep(0.01)
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream)
    ends: list[ExchangeEnd] = []

    def on_end(end: ExchangeEnd) -> None:
        ends.append(end)

    proxy = start_proxy(bg_loop.serve(app), policy=KeepPolicy(), on_exchange_end=on_end)

    async def call(path: str) -> bytes:
        async with (
            aiohttp.ClientSession() as session,
            session.post(proxy.url + path, json={}) as response,
        ):
            return await response.read()

    assert bg_loop.run(call("/keep/v1/messages")) == b"".join(parts)
    assert bg_loop.run(call("/v1/messages")) == b"".join(parts)
    assert bg_loop.run(proxy.server.wait_idle(5))
    kept, plain = ends
    kept_ex, plain_ex = proxy.tape().exchanges
    assert kept.response_body == kept_ex.body == b"".join(parts)
    assert plain.response_body is None
    for end, exchange in ((kept, kept_ex), (plain, plain_ex)):
        # The end frame's facts and the headers as recorded (the cookie redacted).
        assert (end.response_bytes, end.client_bytes) == (
            exchange.end.response_bytes,
            exchange.end.client_bytes,
        )
        assert end.response_headers == exchange.response.headers
        assert "set-cookie" not in {k.lower() for k, _ in end.response_headers}


def test_a_head_with_its_body_is_the_head_replaced() -> None:
    head = RequestHead(
        "POST",
        "/v1/messages",
        (("a", "1"),),
        CIMultiDictProxy(CIMultiDict([("X-A", "1")])),
        "127.0.0.1",
        exchange_id="ex-1",
        pairs=[("X-A", "1")],
        names=("X-A",),
    )
    bodied = head.with_body(b"{}")
    assert bodied.body == b"{}" and head.body == b""  # a new head; this one unchanged
    assert all(getattr(bodied, n) == getattr(head, n) for n in RequestHead.__slots__ if n != "body")
    assert bodied == RequestHead(
        head.method, head.path, head.query, head.headers, head.client, b"{}", "ex-1",
        head.pairs, ("X-A",),
    )  # fmt: skip
    assert bodied != head
    # `with_body` names every field: a field added to the head must be added there too.
    named = ("method", "path", "query", "headers", "client", "body", "exchange_id", "pairs")
    assert list(inspect.signature(RequestHead).parameters) == [*named, "names"]

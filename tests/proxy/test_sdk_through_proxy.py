"""End to end: the official SDKs get through `roller proxy` exactly what they get directly.

The same script of SDK calls (Anthropic Messages, OpenAI Chat Completions, OpenAI
Responses; created and streamed; text and tool-call replies) runs twice, each time
against a fresh mock model with the same id namespace, so ids line up call for call:
once straight at the mock, once through a `ProxyServer` in front of another mock. The
SDKs' HTTP client is given a transport that keeps every byte it sent and received, so
the comparison covers what the SDK parsed (model_dump of every object and stream event)
and the raw bytes under it (the SSE event sequence, response headers).

The only values allowed to differ are the mock's wall clock: the HTTP `Date` header and
the OpenAI `created`/`created_at` seconds, which may tick between the two runs. They are
masked, and checked to be within a few seconds of each other, nothing else.

Then the tape: every exchange is there, in order, its request body byte-identical to what
the SDK sent and the mock received, its response bytes identical to what the SDK got; and
no byte of any file under the tape directory holds an API key, although the mock proves
the keys were forwarded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
from aiohttp import web

from roller.capture.tape import read_tape
from roller.mock import MockModel, parse_scenario
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from roller.proxy.headers import narrow_accept_encoding
from tests.support.servers import BackgroundLoop

OPENAI_KEY = "sk-roller-e2e-openai-2c6f0a9d41b7e835"
ANTHROPIC_KEY = "sk-ant-roller-e2e-anthropic-7d13e5b08fa2c946"
# This SDK version sends its api_key as `Authorization: Bearer`; Claude Code and the
# Anthropic API docs use `x-api-key`. The Anthropic client sends both, with distinct keys.
ANTHROPIC_X_API_KEY = "sk-ant-roller-e2e-x-api-key-5b9e03c7d2a1f468"
KEYS = (OPENAI_KEY, ANTHROPIC_KEY, ANTHROPIC_X_API_KEY)
AUTH_HEADERS = ("authorization", "x-api-key")

LONG_TEXT = "The proxy relays every byte of this reply, streamed in small pieces, unchanged."
SCENARIO = parse_scenario(
    f"""
models = ["mock-model"]
[[rules]]
name = "after the tool"
last_message_role = "tool"
text = "finished"
[[rules]]
name = "call the shell"
tools_offered_any = ["bash"]
text = "Running it."
tool_calls = [{{ role = "shell", command = "echo roller-through-the-proxy" }}]
[[rules]]
name = "say"
text = "{LONG_TEXT}"
""",
    "sdk-through-proxy",
)

SHELL_SCHEMA: Any = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}
ANTHROPIC_TOOLS: Any = [{"name": "bash", "description": "Run", "input_schema": SHELL_SCHEMA}]
CHAT_TOOLS: Any = [{"type": "function", "function": {"name": "bash", "parameters": SHELL_SCHEMA}}]
RESPONSES_TOOLS: Any = [
    {"type": "function", "name": "bash", "parameters": SHELL_SCHEMA, "strict": False}
]
USER: Any = [{"role": "user", "content": "hello"}]


# --- what the SDK's HTTP client saw ------------------------------------------------------
@dataclass
class WireExchange:
    method: str
    target: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytes = b""


class _TeeStream(httpx2.SyncByteStream):
    """Hands the response bytes on to the SDK and keeps a copy, as the SDK reads them."""

    def __init__(self, inner: httpx2.SyncByteStream, record: WireExchange) -> None:
        self._inner = inner
        self._record = record

    def __iter__(self) -> Iterator[bytes]:
        for piece in self._inner:
            self._record.response_body += piece
            yield piece

    def close(self) -> None:
        self._inner.close()


class WireLog(httpx2.BaseTransport):
    """A real HTTP transport that keeps every request and response byte (before any
    content decoding), in order."""

    def __init__(self) -> None:
        self._inner = httpx2.HTTPTransport()
        self.exchanges: list[WireExchange] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        record = WireExchange(
            method=request.method,
            target=request.url.raw_path.decode(),
            request_headers=[(k.decode(), v.decode()) for k, v in request.headers.raw],
            request_body=request.read(),
        )
        self.exchanges.append(record)
        response = self._inner.handle_request(request)
        record.status = response.status_code
        record.response_headers = [(k.decode(), v.decode()) for k, v in response.headers.raw]
        assert isinstance(response.stream, httpx2.SyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_TeeStream(response.stream, record),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._inner.close()


# --- the script of SDK calls -------------------------------------------------------------
def _dump(obj: Any) -> Any:
    return obj.model_dump(mode="json", warnings=False) if hasattr(obj, "model_dump") else obj


Call = Callable[[anthropic.Anthropic, openai.OpenAI], Any]


def anthropic_create(tools: bool) -> Call:
    def call(a: anthropic.Anthropic, _: openai.OpenAI) -> Any:
        extra: Any = {"tools": ANTHROPIC_TOOLS} if tools else {}
        message = a.messages.create(model="claude-mock", max_tokens=64, messages=USER, **extra)
        return {"message": _dump(message), "request_id": message._request_id}

    return call


def anthropic_stream(tools: bool) -> Call:
    def call(a: anthropic.Anthropic, _: openai.OpenAI) -> Any:
        extra: Any = {"tools": ANTHROPIC_TOOLS} if tools else {}
        with a.messages.stream(model="claude-mock", max_tokens=64, messages=USER, **extra) as s:
            events = [_dump(event) for event in s]
            final = s.get_final_message()
        return {"events": events, "final": _dump(final)}

    return call


def chat_create(tools: bool) -> Call:
    def call(_: anthropic.Anthropic, o: openai.OpenAI) -> Any:
        extra: Any = {"tools": CHAT_TOOLS} if tools else {}
        completion = o.chat.completions.create(model="gpt-mock", messages=USER, **extra)
        return {"completion": _dump(completion), "request_id": completion._request_id}

    return call


def chat_stream(tools: bool) -> Call:
    def call(_: anthropic.Anthropic, o: openai.OpenAI) -> Any:
        extra: Any = {"tools": CHAT_TOOLS} if tools else {}
        with o.chat.completions.stream(
            model="gpt-mock", messages=USER, stream_options={"include_usage": True}, **extra
        ) as s:
            events = [_dump(event) for event in s]
            final = s.get_final_completion()
        return {"events": events, "final": _dump(final)}

    return call


def chat_raw_chunks(_: anthropic.Anthropic, o: openai.OpenAI) -> Any:
    chunks = o.chat.completions.create(
        model="gpt-mock", messages=USER, tools=CHAT_TOOLS, stream=True
    )
    return {"events": [_dump(chunk) for chunk in chunks]}


def responses_create(tools: bool) -> Call:
    def call(_: anthropic.Anthropic, o: openai.OpenAI) -> Any:
        extra: Any = {"tools": RESPONSES_TOOLS} if tools else {}
        response = o.responses.create(model="gpt-mock", input="hello", **extra)
        return {"response": _dump(response), "request_id": response._request_id}

    return call


def responses_stream(tools: bool) -> Call:
    def call(_: anthropic.Anthropic, o: openai.OpenAI) -> Any:
        extra: Any = {"tools": RESPONSES_TOOLS} if tools else {}
        with o.responses.stream(model="gpt-mock", input="hello", **extra) as s:
            events = [_dump(event) for event in s]
            final = s.get_final_response()
        return {"events": events, "final": _dump(final)}

    return call


SCRIPT: list[tuple[str, Call]] = [
    (f"{name} {'tools' if tools else 'text'}", make(tools))
    for tools in (False, True)
    for name, make in (
        ("anthropic create", anthropic_create),
        ("anthropic stream", anthropic_stream),
        ("chat create", chat_create),
        ("chat stream", chat_stream),
        ("responses create", responses_create),
        ("responses stream", responses_stream),
    )
]
SCRIPT.append(("chat create stream=True tools", chat_raw_chunks))


# --- one run: a fresh mock, optionally behind a proxy, the whole script -----------------
@dataclass
class MockReceived:
    target: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Run:
    results: list[tuple[str, Any]]
    wire: list[WireExchange]
    received: list[MockReceived]


def _serve_mock(bg_loop: BackgroundLoop, received: list[MockReceived]) -> str:
    app = MockModel(SCENARIO, id_namespace="sdk-through-proxy").app()

    @web.middleware
    async def keep(request: web.Request, handler: Any) -> web.StreamResponse:
        body = await request.read()  # cached: the mock's own read() gets the same bytes
        received.append(MockReceived(request.raw_path, list(request.headers.items()), body))
        response: web.StreamResponse = await handler(request)
        return response

    app.middlewares.append(keep)
    return bg_loop.serve(app)


def _run_script(base_url: str) -> tuple[list[tuple[str, Any]], list[WireExchange]]:
    wire = WireLog()
    http = httpx2.Client(transport=wire)
    a = anthropic.Anthropic(
        base_url=base_url,
        api_key=ANTHROPIC_KEY,
        default_headers={"X-Api-Key": ANTHROPIC_X_API_KEY},
        max_retries=0,
        http_client=http,
    )
    o = openai.OpenAI(
        base_url=base_url + "/v1", api_key=OPENAI_KEY, max_retries=0, http_client=http
    )
    try:
        results = [(name, call(a, o)) for name, call in SCRIPT]
    finally:
        http.close()
    return results, wire.exchanges


def direct_run(bg_loop: BackgroundLoop) -> Run:
    received: list[MockReceived] = []
    results, wire = _run_script(_serve_mock(bg_loop, received))
    return Run(results, wire, received)


def proxied_run(bg_loop: BackgroundLoop, tape_dir: Path) -> tuple[Run, ProxyServer]:
    received: list[MockReceived] = []
    mock_url = _serve_mock(bg_loop, received)
    proxy = ProxyServer(ProxyConfig(tape_dir=tape_dir, upstreams=Upstreams(default=mock_url)))
    proxy_url = bg_loop.run(proxy.start())
    results, wire = _run_script(proxy_url)
    return Run(results, wire, received), proxy


# --- the mock's clock, the one thing allowed to differ ------------------------------------
_CLOCK_KEYS = ("created", "created_at")
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding"})
_CLOCK_BYTES = re.compile(rb'"(created|created_at)": ?(\d+)')


def mask_clock(value: Any, seen: list[float]) -> Any:
    """`value` with every `created`/`created_at` number replaced; the numbers go to `seen`."""
    if isinstance(value, dict):
        masked = {}
        for key, item in value.items():
            if key in _CLOCK_KEYS and isinstance(item, int | float) and not isinstance(item, bool):
                seen.append(item)
                masked[key] = "<clock>"
            else:
                masked[key] = mask_clock(item, seen)
        return masked
    if isinstance(value, list):
        return [mask_clock(item, seen) for item in value]
    return value


def mask_clock_bytes(data: bytes, seen: list[float]) -> bytes:
    seen.extend(int(m.group(2)) for m in _CLOCK_BYTES.finditer(data))
    return _CLOCK_BYTES.sub(rb'"\1":<clock>', data)


def comparable(exchange: WireExchange, seen: list[float]) -> tuple[Any, ...]:
    headers = [(k.lower(), v) for k, v in exchange.response_headers if k.lower() != "date"]
    # Hop-by-hop framing headers are the proxy's own server's to write (the HTTP rules
    # say so), so only their values are compared, not where they sit among the others.
    end_to_end = [(k, v) for k, v in headers if k not in _HOP_BY_HOP]
    framing = sorted((k, v) for k, v in headers if k in _HOP_BY_HOP)
    return (
        exchange.method,
        exchange.target,
        exchange.request_body,
        exchange.status,
        end_to_end,
        framing,
        mask_clock_bytes(exchange.response_body, seen),
    )


def forwarded_headers(received: MockReceived) -> tuple[list[tuple[str, str]], list[str]]:
    per_hop = ("host", "content-length", "connection", "accept-encoding")
    end_to_end = [(k.lower(), v) for k, v in received.headers if k.lower() not in per_hop]
    encodings = [v for k, v in received.headers if k.lower() == "accept-encoding"]
    return end_to_end, encodings


def is_sse(exchange: WireExchange) -> bool:
    types = [v for k, v in exchange.response_headers if k.lower() == "content-type"]
    return types == ["text/event-stream; charset=utf-8"]


def sse_events(body: bytes) -> list[bytes]:
    return [event for event in body.split(b"\n\n") if event.strip()]


def _assert_clocks_agree(direct: list[float], proxied: list[float]) -> None:
    assert len(direct) == len(proxied) > 0
    assert all(abs(d - p) <= 5 for d, p in zip(direct, proxied, strict=True))


# --- the test ----------------------------------------------------------------------------
def test_sdks_get_the_same_through_the_proxy_and_the_tape_holds_it_without_secrets(
    bg_loop: BackgroundLoop, tmp_path: Path
) -> None:
    tape_dir = tmp_path / "tape"
    direct = direct_run(bg_loop)
    proxied, proxy = proxied_run(bg_loop, tape_dir)
    assert bg_loop.run(proxy.wait_idle(5.0))
    tape = read_tape(tape_dir)
    bg_loop.run(proxy.stop(grace=1.0))

    # 1. What the SDKs parsed: every object and every stream event, call for call.
    assert [name for name, _ in proxied.results] == [name for name, _ in SCRIPT]
    direct_clock: list[float] = []
    proxied_clock: list[float] = []
    for (name, d), (_, p) in zip(direct.results, proxied.results, strict=True):
        assert mask_clock(p, proxied_clock) == mask_clock(d, direct_clock), name
    _assert_clocks_agree(direct_clock, proxied_clock)
    streamed = [r for name, r in proxied.results if "stream" in name]
    assert all(len(r["events"]) > 5 for r in streamed)  # the streams really were streams
    tool_replies = json.dumps([r for name, r in proxied.results if name.endswith("tools")])
    assert "roller-through-the-proxy" in tool_replies

    # 2. The bytes under them: status, headers (Date aside), body, SSE event by event.
    assert len(proxied.wire) == len(direct.wire) == len(SCRIPT)
    direct_clock, proxied_clock = [], []
    for d_ex, p_ex in zip(direct.wire, proxied.wire, strict=True):
        assert comparable(p_ex, proxied_clock) == comparable(d_ex, direct_clock), d_ex.target
        if is_sse(p_ex):
            d_events = sse_events(mask_clock_bytes(d_ex.response_body, []))
            p_events = sse_events(mask_clock_bytes(p_ex.response_body, []))
            assert p_events == d_events and len(p_events) > 5
    _assert_clocks_agree(direct_clock, proxied_clock)
    assert sum(is_sse(ex) for ex in direct.wire) == sum("stream" in name for name, _ in SCRIPT)

    # 3. The mock received the same requests: the proxy forwards every end-to-end header
    #    in order, credentials included (they only stay off disk), and the body byte for
    #    byte. `host`, `content-length` and `connection` are per hop; `accept-encoding` is
    #    narrowed to gzip/deflate and written last (docs/architecture.md), here unchanged.
    assert [(r.target, r.body) for r in proxied.received] == [
        (r.target, r.body) for r in direct.received
    ]
    for d_r, p_r in zip(direct.received, proxied.received, strict=True):
        end_to_end, encodings = forwarded_headers(d_r)
        # The SDKs offer zstd too when a zstd module is installed (backports-zstd is,
        # for OpenClaw's store); the proxy narrows it away, as documented.
        narrowed = [narrow_accept_encoding(", ".join(encodings) or None)]
        assert forwarded_headers(p_r) == (end_to_end, narrowed)
    forwarded = {v.rsplit(" ", 1)[-1] for r in proxied.received for _, v in r.headers}
    assert set(KEYS) <= forwarded

    # 4. The tape: every exchange, in order, request and response bytes exact.
    assert tape.problems == ()
    assert len(tape.exchanges) == len(proxied.wire)
    for exchange, sent, got in zip(tape.exchanges, proxied.wire, proxied.received, strict=True):
        # An SDK may close a finished stream without reading the chunked terminator, and
        # under load the proxy can see it leave first: `client_disconnected` after the
        # whole response (every byte relayed, checked below) is the documented rule
        # (docs/protocol.md, "client left after the end"), not a lost exchange.
        left_after_end = exchange.outcome == "client_disconnected" and is_sse(sent)
        assert exchange.outcome == "ok" or left_after_end, exchange.outcome
        assert exchange.request.method == sent.method
        assert exchange.request.path == sent.target.split("?", 1)[0]
        assert exchange.request_body == sent.request_body == got.body
        assert exchange.response is not None and exchange.response.status == sent.status
        assert exchange.body == sent.response_body  # what the SDK got, what the mock sent
        assert exchange.end is not None
        assert exchange.end.response_bytes == exchange.end.client_bytes == len(exchange.body)
        redacted = exchange.request.redacted.headers
        anthropic_call = sent.target.startswith("/v1/messages")
        assert redacted == (
            ("authorization", "x-api-key") if anthropic_call else ("authorization",)
        )
        recorded_names = {name.lower() for name, _ in exchange.request.headers}
        assert not recorded_names & set(AUTH_HEADERS)

    # 5. No key anywhere under the tape directory, in any form the SDKs sent it.
    files = [path for path in tape_dir.rglob("*") if path.is_file()]
    assert files
    everything = b"".join(path.read_bytes() for path in files)
    for key in KEYS:
        assert key.encode() not in everything
        assert key[-16:].encode() not in everything  # not even a tail of it

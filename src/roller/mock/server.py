"""The mock model server: an aiohttp application answering every protocol from a scenario.

`MockModel(scenario).app()` is the application (collect and tests embed it);
`await MockModel(scenario).serve(host, port)` binds it and returns a `RunningMock`.
Rules kept here:
- Never crash on input: a body that is not JSON, not an object, or not the protocol's
  shape gets a 400 in that protocol's error shape; an unknown path a 404; a bug in the mock
  a 500 with the same shape, logged. Every request, answered or not, is recorded in
  `served` (failures are data).
- Streams are written event by event, each handed to the socket before the next, with
  `delay_ms` between events when asked (the proxy's unbuffered-streaming test and its
  benchmark need an upstream that paces its events).
- All state is the id counter and the `served` log (the last `SERVED_KEPT` requests, so a
  benchmark can run for hours); replies depend only on the request.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from aiohttp import web

from roller.errors import UsageError
from roller.mock.dialects import DIALECTS, BadRequest
from roller.mock.dialects.gemini import GeminiDialect
from roller.mock.endpoints import action_of, error_protocol, model_entry, models_list
from roller.mock.ids import IdMint
from roller.mock.reply import estimate_tokens
from roller.mock.request_view import RequestKind, RequestView
from roller.mock.scenario import Decision, Scenario
from roller.wire.endpoints import Endpoint, endpoint_for
from roller.wire.types import JSONObject, ProtocolName

log = logging.getLogger(__name__)

Outcome = Literal["ok", "bad_request", "not_found", "client_disconnected", "mock_error"]

# Harness request bodies carry whole transcripts; aiohttp's 1 MiB default is too small.
_MAX_BODY = 256 * 1024 * 1024
SERVED_KEPT = 10_000


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the mock received and what it did with it."""

    method: str
    path: str
    status: int
    outcome: Outcome
    protocol: ProtocolName | None = None
    model: str | None = None
    kind: RequestKind | None = None
    stream: bool = False
    turn: int | None = None
    rule: str | None = None
    reply: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunningMock:
    """A mock bound to a socket. `url` has no trailing slash and no path."""

    url: str
    host: str
    port: int
    _runner: web.AppRunner

    async def close(self) -> None:
        await self._runner.cleanup()


class MockModel:
    def __init__(
        self,
        scenario: Scenario,
        *,
        delay_ms: int | None = None,
        id_namespace: str = "roller-mock",
        on_request: Callable[[ServedRequest], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.delay_ms = scenario.delay_ms if delay_ms is None else delay_ms
        self.ids = IdMint(id_namespace)
        self.served: collections.deque[ServedRequest] = collections.deque(maxlen=SERVED_KEPT)
        self.requests = 0
        self._on_request = on_request

    def app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> RunningMock:
        runner = web.AppRunner(self.app(), handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = exc.strerror or str(exc)
            raise UsageError(f"cannot listen on {host}:{port}: {reason}") from exc
        bound = runner.addresses[0][1]
        shown = f"[{host}]" if ":" in host else host
        return RunningMock(f"http://{shown}:{bound}", host, int(bound), runner)

    def _record(self, served: ServedRequest) -> None:
        self.requests += 1
        self.served.append(served)
        if self._on_request is not None:
            self._on_request(served)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        endpoint = endpoint_for(request.method, request.path, request.query.items())
        protocol = error_protocol(endpoint, request.headers)
        base = ServedRequest(request.method, request.path, 200, "ok", protocol=protocol)
        try:
            return await self._answer(request, endpoint, base)
        except Exception as exc:
            log.exception("mock model failed on %s %s", request.method, request.path)
            message = f"mock model error: {type(exc).__name__}: {exc}"
            self._record(dataclasses.replace(base, status=500, outcome="mock_error", error=message))
            return _error(protocol, 500, message)

    async def _answer(
        self, request: web.Request, endpoint: Endpoint, base: ServedRequest
    ) -> web.StreamResponse:
        protocol = base.protocol
        assert protocol is not None
        action = action_of(endpoint)
        if action is None or not endpoint.method_allowed:
            status = 404 if action is None else 405
            message = f"no endpoint {request.method} {request.path}"
            self._record(dataclasses.replace(base, status=status, outcome="not_found"))
            return _error(protocol, status, message)
        gemini_shape = endpoint.family == "gemini"
        if action == "models":
            self._record(dataclasses.replace(base, protocol=None))
            body = models_list(self.scenario.models, gemini=gemini_shape)
            return web.json_response(body)
        if action == "model":
            self._record(dataclasses.replace(base, protocol=None, model=endpoint.model))
            return web.json_response(model_entry(endpoint.model or "", gemini=gemini_shape))
        raw = await request.read()
        try:
            view = self._read(protocol, endpoint, raw)
        except BadRequest as exc:
            self._record(
                dataclasses.replace(base, status=400, outcome="bad_request", error=str(exc))
            )
            return _error(protocol, 400, str(exc))
        served = dataclasses.replace(
            base, model=view.model, kind=view.kind, stream=view.stream, turn=view.turn
        )
        if action == "count_tokens":
            self._record(served)
            tokens = estimate_tokens(view.body_size)
            return web.json_response({DIALECTS[protocol].token_count_field: tokens})
        decision = self.scenario.respond(view)
        served = dataclasses.replace(served, rule=decision.rule, reply=decision.reply.summary())
        headers = self._request_id_headers(protocol)
        if not view.stream:
            self._record(served)
            body = DIALECTS[protocol].render(decision.reply, view, self.ids)
            return web.json_response(body, headers=headers)
        if endpoint.stream and not endpoint.sse:
            # Only Gemini streams by its endpoint; without `alt=sse` it is one JSON array.
            self._record(served)
            dialect = DIALECTS[protocol]
            assert isinstance(dialect, GeminiDialect)
            return web.json_response(
                dialect.stream_chunks(decision.reply, view, self.ids), headers=headers
            )
        return await self._stream(request, view, decision, served, headers)

    def _read(self, protocol: ProtocolName, endpoint: Endpoint, raw: bytes) -> RequestView:
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        view = DIALECTS[protocol].read(body, path_model=endpoint.model, path_stream=endpoint.stream)
        return dataclasses.replace(view, body_size=len(raw))

    def _request_id_headers(self, protocol: ProtocolName) -> dict[str, str]:
        found = DIALECTS[protocol].request_id_header
        if found is None:
            return {}
        name, kind = found
        return {name: self.ids.mint(kind)}

    async def _stream(
        self,
        request: web.Request,
        view: RequestView,
        decision: Decision,
        served: ServedRequest,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        events = DIALECTS[view.protocol].render_stream(decision.reply, view, self.ids)
        response = web.StreamResponse(
            headers={
                **headers,
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        delay = (self.delay_ms if decision.delay_ms is None else decision.delay_ms) / 1000
        try:
            await response.prepare(request)
            for index, event in enumerate(events):
                if index and delay:
                    await asyncio.sleep(delay)
                await response.write(event)
            await response.write_eof()
        except ConnectionResetError as exc:
            self._record(dataclasses.replace(served, outcome="client_disconnected", error=str(exc)))
            return response
        self._record(served)
        return response


def _error(protocol: ProtocolName, status: int, message: str) -> web.Response:
    body: JSONObject = DIALECTS[protocol].error_body(status, message)
    return web.json_response(body, status=status)

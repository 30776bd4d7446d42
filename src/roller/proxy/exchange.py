"""One exchange through the proxy: record the request, forward it, stream the answer back.

Rules this module keeps:
- Record first: every frame is on the tape before the bytes it describes go on, so any
  byte a client saw is on the tape. Redaction happens before the `req` frame is built.
- Unbuffered: each piece of the upstream body is recorded and written to the client as
  soon as it arrives (`readany`), never gathered. The request body is read whole before
  forwarding (model requests are small next to their answer; it lets the upstream get an
  exact `content-length`), and forwarded byte for byte.
- The request policy decides once the body is whole (a gateway keys sessions on body-level
  conversation ids too), so the `req` frame, which carries its annotations, is written
  after the body arrived and before anything is forwarded; a request that fails before
  then is still recorded with its full redacted head.
- Every exchange ends with exactly one `end` frame naming its outcome, whatever happened:
  upstream unreachable, an upstream error status (relayed verbatim, outcome `ok`),
  upstream dying mid-body (the client's connection is then closed without a terminating
  chunk, so it sees the truncation), the client going away (the upstream request is
  cancelled by closing its connection), a timeout, a policy rejection, no upstream, or the
  proxy shutting down. Only a kill -9 leaves an exchange without one.
- Responses roller makes itself (502/504/413/400/policy rejections) are JSON
  `{"error": {"type": "roller_…", "message": …}}` and are recorded in `end.meta.client_body`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from roller.capture.tape import Outcome
from roller.proxy.headers import client_response_headers, upstream_request_headers
from roller.proxy.policy import ExchangeEnd, ExchangeError, PolicyDecision, RequestHead
from roller.proxy.redaction import redact_headers, redact_query, roller_evidence
from roller.proxy.routing import upstream_url, without_query_params
from roller.proxy.upstream import UpstreamFailure, classify

if TYPE_CHECKING:
    from roller.proxy.relay import Relay

log = logging.getLogger("roller.proxy")

JSONObject = dict[str, Any]
_CLIENT_GONE = (ConnectionError, aiohttp.ClientConnectionResetError)
_CLIENT_BODY_ERRORS = (OSError, aiohttp.ClientError, HttpProcessingError)


def _json_error(kind: str, message: str) -> JSONObject:
    return {"error": {"type": kind, "message": message}}


class Exchange:
    """One request through the proxy, from its head to its `end` frame."""

    def __init__(self, relay: Relay, request: web.Request) -> None:
        self.relay = relay
        self.tape = relay.tape
        self.request = request
        self.t0 = time.time_ns()
        self.x = relay.tape.begin()
        self.ended = False
        self.recorded_request = False
        self.pending_head: tuple[str, list[tuple[str, str]], list[tuple[str, str]]] | None = None
        self.roller: dict[str, str] = {}
        self.annotations: JSONObject = {}
        self.upstream_status: int | None = None
        self.client_status: int | None = None
        self.request_bytes = 0
        self.response_bytes = 0
        self.client_bytes = 0
        self.response: web.StreamResponse | None = None
        self.upstream_response: aiohttp.ClientResponse | None = None
        self.outcome: Outcome = "proxy_error"
        self.notified = False
        self.body_parts: list[bytes] = []
        self.body_recorded = False
        self.error: ExchangeError | None = None
        self.response_headers: tuple[tuple[str, str], ...] = ()
        self.kept: list[bytes] | None = None  # the response body, when the policy asked

    # -- the exchange, start to end -----------------------------------------------------

    async def run(self) -> web.StreamResponse:
        try:
            return await self._run()
        except asyncio.CancelledError:
            # aiohttp cancels the handler when the client connection is lost, and the
            # server cancels what is still running at shutdown.
            if self.relay.stopping():
                self._end("proxy_shutdown", ExchangeError("proxy_shutdown", "proxy stopped"))
            else:
                self._end(
                    "client_disconnected",
                    ExchangeError("client_disconnected", "the client closed the connection"),
                )
            self._close_upstream()
            # Not awaited: this task is being cancelled; the hook runs in its own task.
            self._notify_soon()
            raise
        except Exception as exc:  # a bug must still end the exchange on the tape
            log.exception("proxy error in exchange %s", self.x)
            error = ExchangeError("proxy_error", f"{type(exc).__name__}: {exc}")
            self._close_upstream()
            if self.response is None:
                body = _json_error("roller_proxy_error", error.message)
                return await self._reply(502, body, "proxy_error", error)
            self._abort_client()
            self._end("proxy_error", error)
            self._notify_soon()
            return self.response

    async def _run(self) -> web.StreamResponse:
        request = self.request
        target = request.raw_path
        headers = list(request.headers.items())
        query = [(k, v) for k, v in request.query.items()]
        self.roller = roller_evidence(headers)
        path = target.split("?", 1)[0]
        # Kept so a request that fails while its body is still arriving is recorded with
        # its full (redacted) head even though no policy decided on it.
        self.pending_head = (path, headers, query)
        body = await self._read_body()
        if body is None:
            return self._response_or_empty()
        head = RequestHead(
            method=request.method,
            path=path,
            query=tuple(query),
            headers=request.headers,
            client=self._peer(),
            body=body,
        )
        decision = PolicyDecision()
        policy_error: ExchangeError | None = None
        if self.relay.policy is not None:
            try:
                decision = await self.relay.policy.decide(head)
            except Exception as exc:  # a failing policy is recorded, not raised
                log.exception("request policy failed in exchange %s", self.x)
                policy_error = ExchangeError("policy_error", f"{type(exc).__name__}: {exc}")
        self.annotations = dict(decision.annotations)
        self.kept = [] if decision.keep_response else None
        base = decision.upstream or self.relay.upstreams.for_path(head.path)
        # The `req` and `body` frames go to the tape together, in one write.
        self._record_request(head.method, head.path, headers, query, base, body=body)

        if policy_error is not None:
            payload = _json_error("roller_policy_error", policy_error.message)
            return await self._reply(500, payload, "proxy_error", policy_error)
        if decision.reject is not None:
            error = ExchangeError("rejected", json.dumps(decision.reject.body)[:500])
            return await self._reply(
                decision.reject.status, decision.reject.body, "rejected", error
            )
        if not target.startswith("/"):
            message = "the request target must be a path (origin form)"
            error = ExchangeError("bad_request_target", message)
            return await self._reply(
                400, _json_error("roller_bad_request", message), "rejected", error
            )
        if base is None:
            message = f"no upstream is configured for {request.method} {head.path}"
            error = ExchangeError("no_upstream", message)
            return await self._reply(
                502, _json_error("roller_no_upstream", message), "no_upstream", error
            )

        url = upstream_url(base, without_query_params(target, decision.remove_query))
        out_headers = upstream_request_headers(
            headers,
            set_headers=decision.set_headers.items(),
            remove_headers=decision.remove_headers,
        )
        try:
            upstream = await self.relay.client.send(request.method, url, out_headers, body)
        except UpstreamFailure as failure:
            return await self._reply(
                failure.client_status, failure.client_body(), failure.outcome, failure.error
            )
        self.upstream_response = upstream
        return await self._relay_response(upstream, url)

    # -- request side --------------------------------------------------------------------

    def _peer(self) -> str | None:
        transport = self.request.transport
        peer = None if transport is None else transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            return f"{peer[0]}:{peer[1]}"
        return self.request.remote

    def _record_request(
        self,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        query: list[tuple[str, str]],
        base: str | None,
        *,
        body: bytes | None = None,
    ) -> None:
        kept_headers = redact_headers(headers)
        kept_query = redact_query(query)
        version = self.request.version
        meta: JSONObject = {
            "method": method,
            "path": path,
            "query": kept_query.kept,
            "headers": kept_headers.kept,
            "redacted": {"headers": kept_headers.removed, "query": kept_query.removed},
            "roller": self.roller,
            "upstream": base,
            "client": self._peer(),
            "http_version": f"{version.major}.{version.minor}",
            "annotations": self.annotations,
        }
        self.tape.request(self.x, meta, t=self.t0, body=body)
        self.recorded_request = True
        self.body_recorded = body is not None

    async def _read_body(self) -> bytes | None:
        """The whole request body (not yet recorded: the `req` frame comes first), or None
        when the exchange already ended."""
        parts = self.body_parts
        try:
            while True:
                data = await self.request.content.readany()
                if not data:
                    break
                self.request_bytes += len(data)
                parts.append(data)
                if self.request_bytes > self.relay.max_request_body:
                    message = f"request body exceeds {self.relay.max_request_body} bytes"
                    await self._reply(
                        413,
                        _json_error("roller_request_too_large", message),
                        "rejected",
                        ExchangeError("request_too_large", message),
                    )
                    return None
        except _CLIENT_BODY_ERRORS as exc:
            self._end("client_disconnected", ExchangeError("client_disconnected", str(exc)))
            await self._notify()
            return None
        return b"".join(parts)

    def _record_body(self) -> None:
        """Write the `body` frame once, with whatever arrived (all of it, normally)."""
        if not self.body_recorded:
            self.body_recorded = True
            self.tape.request_body(self.x, b"".join(self.body_parts))

    # -- response side -------------------------------------------------------------------

    async def _relay_response(
        self, upstream: aiohttp.ClientResponse, url: URL
    ) -> web.StreamResponse:
        self.upstream_status = upstream.status
        received = list(upstream.headers.items())
        kept = redact_headers(received)
        self.response_headers = tuple((k, v) for k, v in kept.kept)
        self.tape.response(
            self.x,
            {
                "status": upstream.status,
                "reason": upstream.reason,
                "headers": kept.kept,
                "redacted": {"headers": kept.removed},
                "http_version": f"{upstream.version.major}.{upstream.version.minor}"
                if upstream.version
                else None,
            },
        )
        response = web.StreamResponse(
            status=upstream.status,
            reason=upstream.reason,
            headers=client_response_headers(received),
        )
        self.response = response
        self.client_status = upstream.status
        try:
            await response.prepare(self.request)
        except _CLIENT_GONE as exc:
            return self._client_gone(exc)

        content = upstream.content
        tape, x, body = self.tape, self.x, self.kept
        while True:
            try:
                data = await content.readany()
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                failure = classify(exc, url)
                self._end(failure.outcome, failure.error)
                self._close_upstream()
                self._abort_client()
                self._notify_soon()
                return response
            if not data:
                break
            tape.chunk(x, data)
            if body is not None:
                body.append(data)
            self.response_bytes += len(data)
            try:
                await response.write(data)
            except _CLIENT_GONE as exc:
                return self._client_gone(exc)
            self.client_bytes += len(data)
        try:
            await response.write_eof()
        except _CLIENT_GONE as exc:
            return self._client_gone(exc)
        upstream.release()
        self._end("ok", None)
        await self._notify()
        return response

    def _client_gone(self, exc: BaseException) -> web.StreamResponse:
        self._close_upstream()
        self._end("client_disconnected", ExchangeError("client_disconnected", str(exc)))
        self._notify_soon()
        assert self.response is not None
        return self.response

    def _notify_soon(self) -> None:
        """Start the end hook without waiting (the handler is about to be cancelled)."""
        if self.ended and not self.notified:
            self.notified = True
            self.relay.notify(self._end_event())

    def _abort_client(self) -> None:
        # Closing (not write_eof) leaves a chunked body without its terminating chunk and
        # a sized body short, so the client sees that the response did not complete.
        transport = self.request.transport
        if transport is not None:
            transport.close()

    def _close_upstream(self) -> None:
        if self.upstream_response is not None:
            # close(), not release(): dropping the connection is what cancels the request
            # on the upstream side.
            self.upstream_response.close()

    def _response_or_empty(self) -> web.StreamResponse:
        return self.response if self.response is not None else web.Response(status=499)

    async def _reply(
        self,
        status: int,
        body: JSONObject,
        outcome: Outcome,
        error: ExchangeError | None,
    ) -> web.StreamResponse:
        """Answer with roller's own JSON response and end the exchange."""
        if not self.recorded_request:
            self._record_minimal_request()
        response = web.Response(
            status=status,
            body=json.dumps(body).encode(),
            content_type="application/json",
        )
        self.response = response
        self.client_status = status
        try:
            await response.prepare(self.request)
            await response.write_eof()
        except _CLIENT_GONE as exc:
            return self._client_gone(exc)
        self._end(outcome, error, client_body=body)
        await self._notify()
        return response

    def _record_minimal_request(self) -> None:
        # Reached when the exchange ends before a policy decided on it (the body never
        # arrived whole): record the head as received, redacted, without annotations.
        if self.pending_head is not None:
            path, headers, query = self.pending_head
            base = self.relay.upstreams.for_path(path)
            self._record_request(self.request.method, path, headers, query, base)
            return
        self.tape.request(
            self.x,
            {"method": self.request.method, "path": self.request.raw_path.split("?", 1)[0]},
            t=self.t0,
        )
        self.recorded_request = True

    def _end(
        self,
        outcome: Outcome,
        error: ExchangeError | None,
        *,
        client_body: JSONObject | None = None,
    ) -> None:
        if self.ended:
            return
        self.ended = True
        if not self.recorded_request:
            self._record_minimal_request()
        self._record_body()
        meta: JSONObject = {
            "outcome": outcome,
            "error": None if error is None else error.as_json(),
            "client_status": self.client_status,
            "upstream_status": self.upstream_status,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "client_bytes": self.client_bytes,
        }
        if client_body is not None:
            meta["client_body"] = client_body
        self.tape.end(self.x, meta)
        self.outcome = outcome
        self.error = error

    def _end_event(self) -> ExchangeEnd:
        return ExchangeEnd(
            exchange_id=self.x,
            outcome=self.outcome,
            client_status=self.client_status,
            upstream_status=self.upstream_status,
            error=self.error,
            roller=self.roller,
            annotations=self.annotations,
            response_headers=self.response_headers,
            response_bytes=self.response_bytes,
            client_bytes=self.client_bytes,
            response_body=None if self.kept is None else b"".join(self.kept),
        )

    async def _notify(self) -> None:
        if not self.ended or self.notified:
            return
        self.notified = True
        task = self.relay.notify(self._end_event())
        if task is not None:
            await asyncio.shield(task)

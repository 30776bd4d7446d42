"""One exchange through the proxy on aiohttp: the sockets around a `Recorder`.

What is recorded, when, and with which outcome is the recorder's (`recorder`, a pure
state machine); this module reads the request, asks the policy, talks to the upstream and
the client, and reports each of those steps to it as an event. `Exchange` extends
`Recorder` (which extends `request_record.RequestRecord`): one object per exchange, its
three layers each defined in their own module, the pure core free of I/O, so a test
drives a `Recorder` alone. Rules this glue keeps:
- Unbuffered: each piece of the upstream body is recorded and written to the client as
  soon as it arrives (`readany`), never gathered; the bytes that came in with the
  response head are recorded with it (one write) and relayed first, and the piece after
  which the upstream body is at its end goes out with the end of the client's body.
- The request body is read whole before forwarding (model requests are small next to
  their answer; it lets the upstream get an exact `content-length`), up to the body
  limit, streaming to the tape as it is read, and forwarded byte for byte.
- The upstream's idle read timeout is the exchange's `IdleWatch` (one timer for the whole
  proxy, not one per read nor per exchange): `since` marks each wait on the upstream;
  its cancellation becomes `upstream_timeout`, any other cancellation stays what it was.
- The request policy judges the head first (`admit`), before a byte of the body is read:
  a refused request costs no body. `Expect: 100-continue` is answered only once the head
  is admitted (the route's expect handler defers it), so a client that waits for it never
  sends the body of a refused request. The policy decides again once the body is whole
  (a gateway keys sessions on body-level conversation ids too), before anything is
  forwarded.
- When the exchange ends other than `ok`, the upstream connection is closed (that is
  what cancels the request upstream); when the recorder says `ABORT`, so is the
  client's, so a truncated response is visible as such.
- The end hook is told exactly once, after the `end` frame, by a plain call (no task, no
  future): when the handler returns and when it is being cancelled (the client went
  away, or the proxy is stopping) alike.
- Few coroutine levels per resumption: the route's handler is `Exchange.serve` itself,
  which awaits the request side (`_forward`, which returns the upstream's response or
  roller's own answer) and then the relay (`_relay`) one after the other, not one inside
  the other: two levels below aiohttp's, where there were five.
- Only what an exchange needs crosses into it, frozen (`services.ExchangeServices`);
  this module does not know the `Relay` that counts exchanges.
- A target the embedder serves itself (`roller.proxy.local`) is handed to it before an
  exchange exists: never forwarded, never recorded, not counted in flight.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import aiohttp
from aiohttp import hdrs, web
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from roller.capture.tape import ExchangeError
from roller.proxy.answers import Abort, Reply
from roller.proxy.expect import CONTINUE
from roller.proxy.idle_watch import IdleWatch
from roller.proxy.policy import (
    Admission,
    PolicyDecision,
    RequestHead,
    RequestPolicy,
)
from roller.proxy.recorder import NO_DECISION, Recorder
from roller.proxy.request_record import ReceivedHead
from roller.proxy.routing import upstream_url, without_query_params
from roller.proxy.services import ExchangeServices, ServicesHolder
from roller.proxy.states import ENDED, IllegalTransition
from roller.proxy.upstream import SEND_ERRORS, UpstreamFailure, UpstreamResponse, classify

log = logging.getLogger("roller.proxy")

_CLIENT_GONE = (ConnectionError, aiohttp.ClientConnectionResetError)
_CLIENT_BODY_ERRORS = (OSError, aiohttp.ClientError, HttpProcessingError)
_UPSTREAM_BODY_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)
_new_head = tuple.__new__  # a ReceivedHead from all its fields, in order


class Exchange(Recorder):
    """One request through the proxy, from its head to its `end` frame: the recorder's
    state machine (its base) driven by the sockets (one object per exchange)."""

    __slots__ = (
        "idle",
        "request",
        "response",
        "services",
        "upstream_response",
        "url",
    )

    def __init__(self, services: ExchangeServices, request: web.Request) -> None:
        self.services = services
        self.request = request
        self.response: web.StreamResponse | None = None
        self.upstream_response: UpstreamResponse | None = None
        self.idle: IdleWatch | None = None  # the upstream's read timeout, once sent
        self.url: URL | None = None  # where the request went, once sent
        target = request.raw_path
        transport = request.transport
        peer = None if transport is None else transport.get_extra_info("peername")
        version = request.version
        # Every field, in ReceivedHead's order, by tuple.__new__ (no NamedTuple __new__
        # in Python: ~2.3k instructions a record, callgrind).
        head = _new_head(
            ReceivedHead,
            (
                time.time_ns(),
                request.method,
                target,
                target.split("?", 1)[0],
                list(request.headers.items()),
                list(request.query.items()) if "?" in target else [],
                f"{peer[0]}:{peer[1]}"
                if isinstance(peer, tuple) and len(peer) >= 2
                else request.remote,
                f"{version.major}.{version.minor}",
            ),
        )
        Recorder.__init__(
            self,
            services.tape,
            services.tape.begin(),
            head,
            route=services.upstreams.for_path,
            max_body=services.max_request_body,
            max_kept=services.max_kept_response,
            redactor=services.redactor,
            plans=services.plans,
        )

    @staticmethod
    async def serve(holder: ServicesHolder, request: web.Request) -> web.StreamResponse:
        """The route's handler, bound to its proxy with `functools.partial`: one exchange,
        counted in flight from its head until its end hook returned, in this one frame
        (one coroutine level fewer on every resumption than a handler that calls it)."""
        services = holder.services
        assert services is not None  # aiohttp serves only once the application started
        local = services.local
        if local is not None and local.serves(request.raw_path):
            return await local.serve(request)  # the embedder's own: not an exchange
        exchange = Exchange(services, request)
        services.started()
        try:
            try:
                step = await exchange._forward()
                if isinstance(step, web.StreamResponse):
                    response = step
                else:
                    response = await exchange._relay(step)
                if exchange.state is not ENDED:  # (`ended`, without the property call)
                    raise IllegalTransition("the exchange returned before its end")
            except Exception as exc:  # a bug must still end the exchange on the tape
                log.exception("proxy error in exchange %s", exchange.exchange_id)
                response = await exchange._after_bug(exc)
            if services.notify is not None:
                services.notify(exchange.end_event())
            return response
        except asyncio.CancelledError:
            # aiohttp cancels the handler when the client connection is lost, and the
            # server cancels what is still running at shutdown.
            if not exchange.ended:
                if services.stopping():
                    exchange.shutdown(time.time_ns())
                else:
                    exchange.client_gone("the client closed the connection", time.time_ns())
            exchange._close_upstream()
            if services.notify is not None:
                services.notify(exchange.end_event())
            raise
        finally:
            if exchange.idle is not None:
                exchange.idle.stop()
            services.finished()

    # -- the exchange, start to end -------------------------------------------------------

    async def _forward(self) -> UpstreamResponse | web.StreamResponse:
        """The request side: admission, body, decision, the upstream's response head (or
        roller's own answer, sent)."""
        request = self.request
        head = self.head
        policy = self.services.policy
        policy_head: RequestHead | None = None
        admission: Admission | None = None
        if policy is None:  # nothing to ask: the recorder judges the head alone
            refusal = self.admitted(None)
        else:
            policy_head = RequestHead(  # positional: no keyword dict per request
                head.method,
                head.path,
                tuple(head.query),
                request.headers,
                head.client,
                b"",
                self.exchange_id,
                head.headers,
                self.plan.names,
            )
            admission, refusal = await self._admit(policy, policy_head)
        if refusal is not None:
            return await self._send_reply(refusal)
        if request.headers.get(hdrs.EXPECT, "").lower() == "100-continue":
            await request.writer.write(CONTINUE)
            request.writer.output_size = 0  # the 100 is not part of the response
        content = request.content
        too_large: Reply | None = None
        try:
            while too_large is None and (data := await content.readany()):
                too_large = self.body_part(data)
                if content.at_eof() and content.exception() is None:
                    break  # the next read would give b"" (one coroutine per body fewer)
        except _CLIENT_BODY_ERRORS as exc:
            self.body_failed(str(exc), time.time_ns())
            return web.Response(status=499)
        if too_large is not None:
            return await self._send_reply(too_large)
        body = self.body_complete()
        decision: PolicyDecision | None = None
        policy_error: ExchangeError | None = None
        if policy is not None and policy_head is not None:
            try:
                decision = await policy.decide(
                    policy_head.with_body(body), admission or Admission()
                )
            except Exception as exc:  # a failing policy is recorded, not raised
                log.exception("request policy failed in exchange %s", self.exchange_id)
                policy_error = ExchangeError("policy_error", f"{type(exc).__name__}: {exc}")
        step = self.decided(decision, policy_error)
        if isinstance(step, Reply):
            return await self._send_reply(step)
        decision = decision or NO_DECISION
        url = upstream_url(step.upstream, without_query_params(head.target, decision.remove_query))
        out_headers = self._plans.upstream(
            self.plan, head.headers, decision.set_headers, decision.remove_headers
        )
        idle = self.idle = self.services.watches.watch()
        self.url = url
        try:
            upstream = await self.services.client.send(head.method, url, out_headers, body)
        except SEND_ERRORS as exc:
            return await self._send_reply(self._failure_answer(classify(exc, url)))
        except asyncio.CancelledError:
            if not idle.timed_out():
                raise
            return await self._send_reply(self._failure_answer(classify(TimeoutError(), url)))
        idle.since = None
        self.upstream_response = upstream
        return upstream

    def _failure_answer(self, failure: UpstreamFailure) -> Reply:
        """The upstream failed before its response head: roller's answer."""
        answer = self.upstream_failed(
            failure.outcome,
            failure.error,
            failure.client_status,
            failure.client_body(),
            time.time_ns(),
        )
        assert isinstance(answer, Reply)  # no response had started
        return answer

    async def _admit(
        self, policy: RequestPolicy, head: RequestHead
    ) -> tuple[Admission | None, Reply | None]:
        """The policy's admission of the head, and the recorder's refusal, if it refuses
        the request on its head."""
        admission: Admission | None = None
        policy_error: ExchangeError | None = None
        try:
            admission = await policy.admit(head)
        except Exception as exc:  # a failing policy is recorded, not raised
            log.exception("request policy failed in exchange %s", head.exchange_id)
            policy_error = ExchangeError("policy_error", f"{type(exc).__name__}: {exc}")
        return admission, self.admitted(admission, policy_error)

    async def _relay(self, upstream: UpstreamResponse) -> web.StreamResponse:
        idle, url = self.idle, self.url
        assert idle is not None and url is not None  # set when the request was sent
        content = upstream.content
        try:  # the body bytes that came in with the head: recorded with it, in one write
            first = content.read_nowait()
        except _UPSTREAM_BODY_ERRORS:
            first = b""  # the stream keeps its failure: the next read raises it again
        version = upstream.version
        relayed_headers = self.upstream_head(
            upstream.status,
            upstream.reason,
            list(upstream.headers.items()),
            None if version is None else f"{version.major}.{version.minor}",
            time.time_ns(),
            first,
        )
        response = web.StreamResponse(
            status=upstream.status, reason=upstream.reason, headers=relayed_headers
        )
        self.response = response
        try:
            await response.prepare(self.request)
        except _CLIENT_GONE as exc:
            return self._lost_client(exc, response)
        chunk, relayed, write, at_end = self.chunk, self.relayed, response.write, False
        clock = idle.time
        data = first
        while True:
            if data:
                # The piece after which the upstream body is at its end goes out with the
                # end of the client's body (one send, one await fewer).
                at_end = content.is_eof()
                try:
                    await (response.write_eof(data) if at_end else write(data))
                except _CLIENT_GONE as exc:
                    return self._lost_client(exc, response)
                relayed(len(data))
                if at_end:
                    break
            try:
                try:
                    idle.since = clock()
                    data = await content.readany()
                    idle.since = None
                except asyncio.CancelledError:
                    if not idle.timed_out():
                        raise
                    raise TimeoutError from None  # the upstream was silent too long
            except _UPSTREAM_BODY_ERRORS as exc:
                failure = classify(exc, url)
                self.upstream_failed(
                    failure.outcome,
                    failure.error,
                    failure.client_status,
                    failure.client_body(),
                    time.time_ns(),
                )
                self._close_upstream()
                self._abort_client()
                return response
            if not data:
                break
            chunk(data)
        if not at_end:
            try:
                await response.write_eof()
            except _CLIENT_GONE as exc:
                return self._lost_client(exc, response)
        upstream.release()
        self.response_complete(time.time_ns())
        return response

    async def _send_reply(self, reply: Reply) -> web.StreamResponse:
        """Send roller's own JSON answer."""
        response = web.Response(
            status=reply.status,
            body=json.dumps(reply.body).encode(),
            content_type="application/json",
        )
        self.response = response
        try:
            await response.prepare(self.request)
            await response.write_eof()
        except _CLIENT_GONE as exc:
            return self._lost_client(exc, response)
        self.replied(time.time_ns())
        return response

    async def _after_bug(self, exc: Exception) -> web.StreamResponse:
        self._close_upstream()
        if self.ended:
            return self.response or web.Response(status=500)
        error = ExchangeError("proxy_error", f"{type(exc).__name__}: {exc}")
        step = self.failed(error, time.time_ns())
        if isinstance(step, Abort):
            self._abort_client()
            return self.response or web.Response(status=502)
        return await self._send_reply(step)

    # -- the sockets ------------------------------------------------------------------------

    def _lost_client(self, exc: BaseException, response: web.StreamResponse) -> web.StreamResponse:
        self._close_upstream()
        self.client_gone(str(exc), time.time_ns())
        return response

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

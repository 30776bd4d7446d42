"""The recorder: one exchange's tape frames and outcome, as a pure state machine.

The aiohttp glue (`exchange`) reports what happened on the sockets as events; the
recorder writes the frames to a `FrameSink` (the tape writer; a list in tests) and says
what roller must answer itself (`Reply`) or that the client's connection must be cut
(`ABORT`). No I/O of its own, no aiohttp, no clock: times come with the events (chunk
frames are stamped by the sink as it writes them, which is when their bytes arrived).

Its states and the events each accepts are `states` (the diagram there).

Rules this module keeps (docs/architecture.md, "roller.capture.tape" and "roller.proxy"):
- Refuse on the head when the head suffices, before a byte of the body is read: a target
  that is not a safe path (`routing.target_problem`), a policy's admission refusal, a
  `content-length` over the limit. Such a request is recorded by its head and outcome
  only: a `req` frame without a `body` frame, and its `end` frame.
- Record first. The `req` frame (redacted, `request_record`) goes to the tape once the
  request is admitted and either the policy decided, enough of the body is waiting to be
  written (then the body streams in parts), or the exchange ends or is answered; so the
  `req` frame is on the tape whenever the state is past DECIDING, and never before the
  request was admitted or refused. Every byte read of an admitted body reaches the tape
  before the request is forwarded. The `resp` frame is written before the response is
  relayed, and each `chunk` frame before its bytes go to the client (the glue calls
  `chunk` before it writes).
- Exactly one `end` frame: every ending event writes it and enters ENDED; nothing is
  accepted after. The end hook's `ExchangeEnd` comes from `end_event()`.
- The outcome table: roller's own answers are `OWN_ANSWERS` (by error code), a policy's
  rejection carries its own status and body, upstream failures arrive already named
  (`upstream.classify`). The `end` frame of an answered exchange is written once the
  answer is out (`replied`), so it can say whether the client got it.
- A response body kept for the end hook (`PolicyDecision.keep_response`) is kept up to
  `max_kept` bytes; past that it is let go and the end event says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from roller.capture.tape import EndMeta, ExchangeError, Outcome, ResponseMeta
from roller.proxy.answers import (
    ABORT,
    OWN_ANSWERS,
    Abort,
    Forward,
    JSONObject,
    Reply,
    error_body,
)
from roller.proxy.header_plan import HeaderPlans, Pick, RequestPlan
from roller.proxy.policy import Admission, ExchangeEnd, PolicyDecision
from roller.proxy.redaction import DEFAULT_REDACTOR, Redactor
from roller.proxy.request_record import FrameSink, Pairs, ReceivedHead, RequestRecord
from roller.proxy.routing import target_problem
from roller.proxy.states import (
    ADMITTING,
    ALLOWED,
    DECIDING,
    ENDED,
    FORWARDING,
    RECEIVING,
    RELAYING,
    REPLYING,
    IllegalTransition,
)

NO_DECISION: Final = PolicyDecision()  # what is decided without a policy (built once)
NO_ADMISSION: Final = Admission()  # what is admitted without a policy (built once)
_NO_EXTRA: Final[Mapping[str, Any]] = {}  # an EndMeta's `extra`: roller writes none
_new_record = tuple.__new__  # a record from all its fields, without NamedTuple's Python __new__


class Recorder(RequestRecord):
    """One exchange, from its head to its `end` frame (see the module docstring). Its
    request record is its base (`request_record`): one object, not two."""

    __slots__ = (
        "_answer",
        "_end",
        "_kept",
        "_kept_bytes",
        "_kept_over",
        "_max_body",
        "_max_kept",
        "_outcome",
        "_plans",
        "_response_headers",
        "_upstream",
        "_write_chunk",
        "annotations",
        "client_bytes",
        "client_status",
        "response_bytes",
        "state",
        "upstream_status",
    )

    def __init__(
        self,
        sink: FrameSink,
        exchange_id: str,
        head: ReceivedHead,
        *,
        route: Callable[[str], str | None],
        max_body: int,
        max_kept: int = 1 << 62,
        redactor: Redactor = DEFAULT_REDACTOR,
        plans: HeaderPlans | None = None,
    ) -> None:
        self._plans = plans = plans or HeaderPlans(redactor)
        # Every header decision about the request, taken once per name sequence.
        plan: RequestPlan = plans.request(head.headers)
        roller = plan.evidence(head.headers) if plan.roller else {}
        RequestRecord.__init__(self, sink, exchange_id, head, redactor, roller, plan)
        self.state = ADMITTING
        self.annotations: Mapping[str, Any] = {}
        self.client_status: int | None = None
        self.upstream_status: int | None = None
        self.response_bytes = 0
        self.client_bytes = 0
        self._write_chunk = sink.chunk
        self._upstream = route(head.path)  # as known before the decision
        self._max_body = max_body
        self._max_kept = max_kept
        self._answer: tuple[Outcome, ExchangeError, JSONObject] | None = None
        self._end: EndMeta | None = None
        self._outcome: Outcome = "proxy_error"  # set when the exchange ends
        self._kept: list[bytes] | None = None  # the response body, when the policy asked
        self._kept_bytes = 0
        self._kept_over = False  # it was kept, until it passed max_kept
        self._response_headers: tuple[tuple[str, str], ...] = ()  # as recorded

    @property
    def ended(self) -> bool:
        return self.state is ENDED

    # -- the request ----------------------------------------------------------------------

    def admitted(
        self, admission: Admission | None, policy_error: ExchangeError | None = None
    ) -> Reply | None:
        """The policy's judgement of the head (None without a policy, or when it raised
        `policy_error`): a `Reply` refuses the request before its body is read; None lets
        the body be read."""
        if self.state is not ADMITTING:
            raise self._illegal("admitted")
        admission = admission or NO_ADMISSION
        head = self.head
        self.annotations = admission.annotations
        self._upstream = admission.upstream or self._upstream
        if policy_error is not None:
            return self._refused(self._own_answer(policy_error))
        problem = target_problem(head.target)
        if problem is not None:
            return self._refused(self._own_answer(ExchangeError("bad_request_target", problem)))
        if admission.reject is not None:
            return self._refused(self._rejection(admission.reject.status, admission.reject.body))
        announced = self.plan.announced(head.headers)
        if announced is not None and announced > self._max_body:
            return self._refused(self._too_large(f"announces {announced}"))
        self.state = RECEIVING
        return None

    def body_part(self, data: bytes) -> Reply | None:
        """A piece of the request body; a `Reply` (413) once the body is over the limit."""
        if self.state is not RECEIVING:
            raise self._illegal("body_part")
        self.add_part(data, self._upstream, self.annotations)
        if self.request_bytes <= self._max_body:
            return None
        self.write_request(self._upstream, self.annotations)
        return self._too_large(f"exceeds {self._max_body}")

    def body_complete(self) -> bytes:
        """The body arrived whole; returns it (the policy reads it, the upstream gets it)."""
        if self.state is not RECEIVING:
            raise self._illegal("body_complete")
        self.state = DECIDING
        return self.join_body(self._upstream, self.annotations)

    def body_failed(self, message: str, t: int) -> None:
        """Reading the body failed (the client went away, or sent a broken body)."""
        self._expect("body_failed")
        self._finish("client_disconnected", ExchangeError("client_disconnected", message), t)

    def decided(
        self, decision: PolicyDecision | None, policy_error: ExchangeError | None = None
    ) -> Reply | Forward:
        """The policy's decision (None without a policy, or when it raised `policy_error`):
        records the request and says whether to forward it or answer it."""
        if self.state is not DECIDING:
            raise self._illegal("decided")
        decision = decision or NO_DECISION
        upstream = decision.upstream or self._upstream
        later = decision.annotations
        if later:
            self.annotations = {**self.annotations, **later} if self.annotations else later
        if decision.keep_response:
            self._kept = []
        self.write_request(upstream, self.annotations, later)
        if policy_error is not None:
            return self._own_answer(policy_error)
        if decision.reject is not None:
            return self._rejection(decision.reject.status, decision.reject.body)
        if upstream is None:
            message = f"no upstream is configured for {self.head.method} {self.head.path}"
            return self._own_answer(ExchangeError("no_upstream", message))
        self.state = FORWARDING
        return _new_record(Forward, (upstream,))

    # -- the response ---------------------------------------------------------------------

    def upstream_head(
        self,
        status: int,
        reason: str | None,
        headers: Pairs,
        http_version: str | None,
        t: int,
        first: bytes = b"",
    ) -> tuple[tuple[str, str], ...]:
        """The upstream's response head arrived, with the `first` body bytes that came
        with it (if any): recorded (in one write) before either is relayed. Returns the
        headers to relay to the client."""
        if self.state is not FORWARDING:
            raise self._illegal("upstream_head")
        plan = self._plans.response(headers)
        kept = plan.recorded(headers)
        # Every field, in ResponseMeta's order, by tuple.__new__: no Python-level __new__
        # (a test checks the recorder's metas against ones built by keyword).
        meta = _new_record(
            ResponseMeta, (status, reason, kept, plan.removed, http_version, _NO_EXTRA)
        )
        self._response_headers = kept
        self.upstream_status = self.client_status = status
        self.state = RELAYING
        if first:
            self._sink.response(self.exchange_id, meta, t=t, first=first)
            self.response_bytes += len(first)  # `_count`, in place
            if self._kept is not None:
                self._keep(first)
        else:
            self._sink.response(self.exchange_id, meta, t=t)
        relayed: Pick = plan.relayed
        return relayed(headers)

    def chunk(self, data: bytes) -> None:
        """Response bytes from the upstream, recorded before they go to the client."""
        if self.state is not RELAYING:
            raise self._illegal("chunk")
        self._write_chunk(self.exchange_id, data)
        self._count(data)

    def relayed(self, size: int) -> None:
        """`size` bytes of the response were handed to the client."""
        if self.state is not RELAYING:
            raise self._illegal("relayed")
        self.client_bytes += size

    def response_complete(self, t: int) -> None:
        """The whole upstream response was relayed (whatever its status: outcome `ok`)."""
        if self.state is not RELAYING:
            raise self._illegal("response_complete")
        self._finish("ok", None, t)

    def upstream_failed(
        self, outcome: Outcome, error: ExchangeError, status: int, body: JSONObject, t: int
    ) -> Reply | Abort:
        """The upstream failed (named by `upstream.classify`): before its head, roller
        answers with `status` and `body`; mid-response, the client's connection is cut."""
        self._expect("upstream_failed")
        if self.state is FORWARDING:
            return self._reply(outcome, error, status, body)
        self._finish(outcome, error, t)
        return ABORT

    def replied(self, t: int) -> None:
        """Roller's own answer reached the client."""
        self._expect("replied")
        assert self._answer is not None
        outcome, error, body = self._answer
        self._finish(outcome, error, t, client_body=body)

    # -- endings from anywhere ------------------------------------------------------------

    def client_gone(self, message: str, t: int) -> None:
        """The client went away (its connection closed or broke)."""
        self._expect("client_gone")
        self._finish("client_disconnected", ExchangeError("client_disconnected", message), t)

    def shutdown(self, t: int) -> None:
        """The proxy stopped while the exchange was in flight."""
        self._expect("shutdown")
        self._finish("proxy_shutdown", ExchangeError("proxy_shutdown", "proxy stopped"), t)

    def failed(self, error: ExchangeError, t: int) -> Reply | Abort:
        """A bug in the proxy: answered 502 if nothing was sent yet, else the client is cut."""
        self._expect("failed")
        if self.state in (RELAYING, REPLYING):
            self._finish("proxy_error", error, t)
            return ABORT
        self._record_request()
        return self._own_answer(error)

    def end_event(self) -> ExchangeEnd:
        """What the end hook receives (once the exchange ended)."""
        if self.state is not ENDED:
            raise self._illegal("end_event")
        assert self._end is not None
        return ExchangeEnd(  # every field, in order: no keyword dict per exchange
            self.exchange_id,
            self.head.method,
            self.head.path,
            self._outcome,
            self.client_status,
            self.upstream_status,
            self._end.error,
            self.roller,
            dict(self.annotations),
            self._response_headers,
            self.response_bytes,
            self.client_bytes,
            None if self._kept is None else b"".join(self._kept),
            self._kept_over,
        )

    # -- internals ------------------------------------------------------------------------

    def _expect(self, event: str) -> None:
        if self.state not in ALLOWED[event]:
            raise self._illegal(event)

    def _illegal(self, event: str) -> IllegalTransition:
        return IllegalTransition(f"{event} in state {self.state.value}")

    def _record_request(self) -> None:
        """Whatever of the request is not on the tape yet (the `req` frame first)."""
        self.write_request(self._upstream, self.annotations)

    def _refused(self, reply: Reply) -> Reply:
        """A refusal on the head: the `req` frame alone goes to the tape."""
        self._record_request()
        return reply

    def _count(self, data: bytes) -> None:
        """Response bytes on the tape (and kept for the end hook, when it asked)."""
        self.response_bytes += len(data)
        if self._kept is not None:  # references to the chunks, no copy
            self._keep(data)

    def _keep(self, data: bytes) -> None:
        assert self._kept is not None
        self._kept_bytes += len(data)
        if self._kept_bytes <= self._max_kept:
            self._kept.append(data)
        else:  # let it go: a gateway judges such a response without its body
            self._kept = None
            self._kept_over = True

    def _too_large(self, detail: str) -> Reply:
        message = f"request body {detail} bytes, over the limit of {self._max_body}"
        return self._own_answer(ExchangeError("request_too_large", message))

    def _own_answer(self, error: ExchangeError) -> Reply:
        answer = OWN_ANSWERS[error.code]
        body = error_body(answer.error_type, error.message)
        return self._reply(answer.outcome, error, answer.status, body)

    def _rejection(self, status: int, body: JSONObject) -> Reply:
        error = ExchangeError("rejected", json.dumps(body)[:500])
        return self._reply("rejected", error, status, body)

    def _reply(
        self, outcome: Outcome, error: ExchangeError, status: int, body: JSONObject
    ) -> Reply:
        self._answer = (outcome, error, body)
        self.client_status = status
        self.state = REPLYING
        return Reply(status, body)

    def _finish(
        self,
        outcome: Outcome,
        error: ExchangeError | None,
        t: int,
        *,
        client_body: JSONObject | None = None,
    ) -> None:
        if self.unrecorded:  # (the common ending has nothing left to write)
            self._record_request()
        # ENDED before the write: should the sink fail, no second end frame is attempted.
        self.state = ENDED
        self._outcome = outcome
        # Every field, in EndMeta's order (as ResponseMeta above).
        end = self._end = _new_record(
            EndMeta,
            (
                outcome,
                error,
                self.client_status,
                self.upstream_status,
                self.request_bytes,
                self.response_bytes,
                self.client_bytes,
                client_body,
                _NO_EXTRA,
            ),
        )
        self._sink.end(self.exchange_id, end, t=t)

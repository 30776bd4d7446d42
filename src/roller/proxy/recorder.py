"""The recorder: one exchange's tape frames and outcome, as a pure state machine.

The aiohttp glue (`exchange`) reports what happened on the sockets as events; the
recorder writes the frames to a `FrameSink` (the tape writer; a list in tests) and says
what roller must answer itself (`Reply`) or that the client's connection must be cut
(`ABORT`). No I/O of its own, no aiohttp, no clock: times come with the events (chunk
frames are stamped by the sink as it writes them, which is when their bytes arrived).

States and the events that move between them (any other event is `IllegalTransition`):

    RECEIVING_BODY ─body_complete→ DECIDING ─decided→ FORWARDING ─upstream_head→ RELAYING
       │ body_part: over the limit     │ decided: answer   │ upstream_failed          │
       └──────────────→ REPLYING ←─────┴───────────────────┘                          │
                           │ replied               response_complete, upstream_failed │
                           ▼                                                          │
                         ENDED ←──────────────────────────────────────────────────────┘
                           ▲ body_failed, client_gone, shutdown, failed: from any other state

Rules this module keeps (docs/architecture.md, "roller.capture.tape" and "roller.proxy"):
- Record first. The `req` frame (redacted here, before it is built) goes to the tape with
  the `body` frame, in one write, when the policy has decided, or when the exchange ends
  or is answered before it could; so the `req` frame is on the tape exactly when the
  state is neither RECEIVING_BODY nor DECIDING. The `resp` frame is written before the
  response is relayed, and each `chunk` frame before its bytes go to the client (the
  glue calls `chunk` before it writes).
- Exactly one `end` frame: every ending event writes it and enters ENDED; nothing is
  accepted after. The end hook's `ExchangeEnd` comes from `end_event()`.
- The outcome table: roller's own answers are `OWN_ANSWERS` (by error code), a policy's
  rejection carries its own status and body, upstream failures arrive already named
  (`upstream.classify`). The `end` frame of an answered exchange is written once the
  answer is out (`replied`), so it can say whether the client got it.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, Protocol

from roller.capture.tape import (
    EndMeta,
    ExchangeError,
    Outcome,
    Redaction,
    RequestMeta,
    ResponseMeta,
)
from roller.proxy.policy import ExchangeEnd, PolicyDecision
from roller.proxy.redaction import redact_headers, redact_query, roller_evidence

JSONObject = dict[str, Any]
Pairs = Sequence[tuple[str, str]]


class State(enum.Enum):
    RECEIVING_BODY = "receiving_body"  # the head arrived; nothing is on the tape yet
    DECIDING = "deciding"  # the body is whole; the request policy is deciding
    FORWARDING = "forwarding"  # req+body recorded, sent upstream, no response head yet
    RELAYING = "relaying"  # resp recorded; the response is being relayed chunk by chunk
    REPLYING = "replying"  # roller is sending its own answer
    ENDED = "ended"  # the end frame is on the tape


class IllegalTransition(RuntimeError):
    """An event the exchange's state does not allow: a bug in the glue, not an I/O state."""


class FrameSink(Protocol):
    """Where frames go: `TapeWriter` satisfies it."""

    def request(self, exchange_id: str, meta: RequestMeta, *, t: int, body: bytes) -> None: ...
    def response(self, exchange_id: str, meta: ResponseMeta, *, t: int) -> None: ...
    def chunk(self, exchange_id: str, data: bytes) -> None: ...
    def end(self, exchange_id: str, meta: EndMeta, *, t: int) -> None: ...


class ReceivedHead(NamedTuple):
    """A request head as received, secrets included: held in memory, never recorded as is.

    Like the tape metas, a NamedTuple: immutable and cheap to build once per request."""

    t: int  # when it arrived (wall-clock ns): the `req` frame's time
    method: str
    target: str  # path and query exactly as sent
    path: str  # `target` without the query
    headers: Pairs
    query: Pairs  # decoded
    client: str | None  # peer host:port
    http_version: str


class Reply(NamedTuple):
    """Answer the client with roller's own JSON response, then report `replied`."""

    status: int
    body: JSONObject


class Forward(NamedTuple):
    """Send the request to `upstream`, then report `upstream_head` or `upstream_failed`."""

    upstream: str


class Abort:
    """Close the client's connection: a response started that cannot be finished (a chunked
    body then lacks its terminating chunk, a sized one is short, so the client can tell)."""


ABORT: Final = Abort()


@dataclass(frozen=True, slots=True)
class OwnAnswer:
    outcome: Outcome
    status: int
    error_type: str  # `error.type` in the JSON body


# Roller's own answers, by error code (upstream failures: roller.proxy.upstream.classify).
OWN_ANSWERS: Mapping[str, OwnAnswer] = {
    "request_too_large": OwnAnswer("rejected", 413, "roller_request_too_large"),
    "bad_request_target": OwnAnswer("rejected", 400, "roller_bad_request"),
    "no_upstream": OwnAnswer("no_upstream", 502, "roller_no_upstream"),
    "policy_error": OwnAnswer("proxy_error", 500, "roller_policy_error"),
    "proxy_error": OwnAnswer("proxy_error", 502, "roller_proxy_error"),
}
NO_DECISION: Final = PolicyDecision()  # what is decided without a policy (built once)
_BEFORE_REQ_FRAME: Final = (State.RECEIVING_BODY, State.DECIDING)
_LIVE: Final = tuple(state for state in State if state is not State.ENDED)
_RECEIVING: Final = State.RECEIVING_BODY
_DECIDING: Final = State.DECIDING
_FORWARDING: Final = State.FORWARDING
_RELAYING: Final = State.RELAYING
_ENDED: Final = State.ENDED

# The states each event is accepted in (the diagram above); anything else is illegal.
# Tuples, not sets: `in` then compares identities, where a set would call Enum.__hash__,
# a Python function. The events every exchange sees test their one state inline
# (`is _RELAYING`, ...): a call saved per event, measured; a test checks every event in
# every state against this table.
ALLOWED: Mapping[str, tuple[State, ...]] = {
    "body_part": (State.RECEIVING_BODY,),
    "body_complete": (State.RECEIVING_BODY,),
    "body_failed": (State.RECEIVING_BODY,),
    "decided": (State.DECIDING,),
    "upstream_head": (State.FORWARDING,),
    "chunk": (State.RELAYING,),
    "relayed": (State.RELAYING,),
    "response_complete": (State.RELAYING,),
    "upstream_failed": (State.FORWARDING, State.RELAYING),
    "replied": (State.REPLYING,),
    "client_gone": _LIVE,
    "shutdown": _LIVE,
    "failed": _LIVE,
    "end_event": (State.ENDED,),
}


def error_body(error_type: str, message: str) -> JSONObject:
    return {"error": {"type": error_type, "message": message}}


class Recorder:
    """One exchange, from its head to its `end` frame (see the module docstring)."""

    __slots__ = (
        "_answer",
        "_body",
        "_end",
        "_kept",
        "_max_body",
        "_outcome",
        "_response_headers",
        "_route",
        "_sink",
        "_write_chunk",
        "annotations",
        "client_bytes",
        "client_status",
        "exchange_id",
        "head",
        "request_bytes",
        "response_bytes",
        "roller",
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
    ) -> None:
        self.exchange_id = exchange_id
        self.head = head
        self.state = State.RECEIVING_BODY
        self.roller = roller_evidence(head.headers)
        self.annotations: JSONObject = {}
        self.client_status: int | None = None
        self.upstream_status: int | None = None
        self.request_bytes = 0
        self.response_bytes = 0
        self.client_bytes = 0
        self._sink = sink
        self._write_chunk = sink.chunk
        self._route = route
        self._max_body = max_body
        self._body: list[bytes] = []
        self._answer: tuple[Outcome, ExchangeError, JSONObject] | None = None
        self._end: EndMeta | None = None
        self._outcome: Outcome = "proxy_error"  # set when the exchange ends
        self._kept: list[bytes] | None = None  # the response body, when the policy asked
        self._response_headers: tuple[tuple[str, str], ...] = ()  # as recorded

    @property
    def ended(self) -> bool:
        return self.state is State.ENDED

    # -- the request ----------------------------------------------------------------------

    def body_part(self, data: bytes) -> Reply | None:
        """A piece of the request body; a `Reply` (413) once the body is over the limit."""
        if self.state is not _RECEIVING:
            raise self._illegal("body_part")
        self._body.append(data)
        self.request_bytes += len(data)
        if self.request_bytes <= self._max_body:
            return None
        self._record_request(self._route(self.head.path))
        return self._own_answer(
            ExchangeError("request_too_large", f"request body exceeds {self._max_body} bytes")
        )

    def body_complete(self) -> bytes:
        """The body arrived whole; returns it (the policy reads it, the upstream gets it)."""
        if self.state is not _RECEIVING:
            raise self._illegal("body_complete")
        body = b"".join(self._body)
        self._body = [body]
        self.state = State.DECIDING
        return body

    def body_failed(self, message: str, t: int) -> None:
        """Reading the body failed (the client went away, or sent a broken body)."""
        self._expect("body_failed")
        self._finish("client_disconnected", ExchangeError("client_disconnected", message), t)

    def decided(
        self, decision: PolicyDecision | None, policy_error: ExchangeError | None = None
    ) -> Reply | Forward:
        """The policy's decision (None without a policy, or when it raised `policy_error`):
        records the request and says whether to forward it or answer it."""
        if self.state is not _DECIDING:
            raise self._illegal("decided")
        decision = decision or NO_DECISION
        upstream = decision.upstream or self._route(self.head.path)
        self.annotations = dict(decision.annotations)
        if decision.keep_response:
            self._kept = []
        self._record_request(upstream)
        if policy_error is not None:
            return self._own_answer(policy_error)
        if decision.reject is not None:
            status, body = decision.reject.status, decision.reject.body
            error = ExchangeError("rejected", json.dumps(body)[:500])
            return self._reply("rejected", error, status, body)
        if not self.head.target.startswith("/"):
            message = "the request target must be a path (origin form)"
            return self._own_answer(ExchangeError("bad_request_target", message))
        if upstream is None:
            message = f"no upstream is configured for {self.head.method} {self.head.path}"
            return self._own_answer(ExchangeError("no_upstream", message))
        self.state = State.FORWARDING
        return Forward(upstream)

    # -- the response ---------------------------------------------------------------------

    def upstream_head(
        self, status: int, reason: str | None, headers: Pairs, http_version: str | None, t: int
    ) -> None:
        """The upstream's response head arrived: recorded before it is relayed."""
        if self.state is not _FORWARDING:
            raise self._illegal("upstream_head")
        kept = redact_headers(headers)
        # Positional (the field order of ResponseMeta): ~40% cheaper than keywords.
        meta = ResponseMeta(status, reason, kept.kept, kept.removed, http_version)
        self._sink.response(self.exchange_id, meta, t=t)
        self._response_headers = kept.kept
        self.upstream_status = self.client_status = status
        self.state = State.RELAYING

    def chunk(self, data: bytes) -> None:
        """Response bytes from the upstream, recorded before they go to the client."""
        if self.state is not _RELAYING:
            raise self._illegal("chunk")
        self._write_chunk(self.exchange_id, data)
        self.response_bytes += len(data)
        if self._kept is not None:  # references to the chunks, no copy
            self._kept.append(data)

    def relayed(self, size: int) -> None:
        """`size` bytes of the response were handed to the client."""
        if self.state is not _RELAYING:
            raise self._illegal("relayed")
        self.client_bytes += size

    def response_complete(self, t: int) -> None:
        """The whole upstream response was relayed (whatever its status: outcome `ok`)."""
        if self.state is not _RELAYING:
            raise self._illegal("response_complete")
        self._finish("ok", None, t)

    def upstream_failed(
        self, outcome: Outcome, error: ExchangeError, status: int, body: JSONObject, t: int
    ) -> Reply | Abort:
        """The upstream failed (named by `upstream.classify`): before its head, roller
        answers with `status` and `body`; mid-response, the client's connection is cut."""
        self._expect("upstream_failed")
        if self.state is State.FORWARDING:
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
        if self.state in (State.RELAYING, State.REPLYING):
            self._finish("proxy_error", error, t)
            return ABORT
        if self.state in _BEFORE_REQ_FRAME:
            self._record_request(self._route(self.head.path))
        return self._own_answer(error)

    def end_event(self) -> ExchangeEnd:
        """What the end hook receives (once the exchange ended)."""
        if self.state is not _ENDED:
            raise self._illegal("end_event")
        assert self._end is not None
        return ExchangeEnd(
            exchange_id=self.exchange_id,
            outcome=self._outcome,
            client_status=self.client_status,
            upstream_status=self.upstream_status,
            error=self._end.error,
            roller=self.roller,
            annotations=self.annotations,
            response_headers=self._response_headers,
            response_bytes=self.response_bytes,
            client_bytes=self.client_bytes,
            response_body=None if self._kept is None else b"".join(self._kept),
        )

    # -- internals ------------------------------------------------------------------------

    def _expect(self, event: str) -> None:
        if self.state not in ALLOWED[event]:
            raise self._illegal(event)

    def _illegal(self, event: str) -> IllegalTransition:
        return IllegalTransition(f"{event} in state {self.state.value}")

    def _record_request(self, upstream: str | None) -> None:
        """The `req` and `body` frames, in one write (the body as far as it arrived)."""
        head = self.head
        headers = redact_headers(head.headers)
        query = redact_query(head.query)
        # Positional, in RequestMeta's field order: ~40% cheaper than keywords (measured).
        meta = RequestMeta(
            head.method,
            head.path,
            query.kept,
            headers.kept,
            Redaction(headers.removed, query.removed),
            self.roller,
            upstream,
            head.client,
            head.http_version,
            self.annotations,
        )
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._sink.request(self.exchange_id, meta, t=head.t, body=body)

    def _own_answer(self, error: ExchangeError) -> Reply:
        answer = OWN_ANSWERS[error.code]
        body = error_body(answer.error_type, error.message)
        return self._reply(answer.outcome, error, answer.status, body)

    def _reply(
        self, outcome: Outcome, error: ExchangeError, status: int, body: JSONObject
    ) -> Reply:
        self._answer = (outcome, error, body)
        self.client_status = status
        self.state = State.REPLYING
        return Reply(status, body)

    def _finish(
        self,
        outcome: Outcome,
        error: ExchangeError | None,
        t: int,
        *,
        client_body: JSONObject | None = None,
    ) -> None:
        if self.state in _BEFORE_REQ_FRAME:
            self._record_request(self._route(self.head.path))
        # ENDED before the write: should the sink fail, no second end frame is attempted.
        self.state = State.ENDED
        self._outcome = outcome
        # Positional, in EndMeta's field order (as RequestMeta above).
        self._end = EndMeta(
            outcome,
            error,
            self.client_status,
            self.upstream_status,
            self.request_bytes,
            self.response_bytes,
            self.client_bytes,
            client_body,
        )
        self._sink.end(self.exchange_id, self._end, t=t)

"""The recorder without sockets: each playbook is a sequence of events and the exact
frames (and answers) it must produce, one per outcome of docs/architecture.md's table and
per edge case — refusals on the head, a body streaming to the tape in parts, a bounded
kept response — then the invariants over any sequence of events at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from roller.capture.tape import EndMeta, ExchangeError, Redaction, RequestMeta, ResponseMeta
from roller.proxy import Admission, ExchangeEnd, PolicyDecision, Rejection
from roller.proxy.answers import ABORT, OWN_ANSWERS, Forward, Reply
from roller.proxy.recorder import Recorder
from roller.proxy.redaction import Redactor
from roller.proxy.request_record import FLUSH_BYTES, ReceivedHead
from roller.proxy.routing import UNSAFE_PATH
from roller.proxy.states import ALLOWED, IllegalTransition, State
from roller.proxy.upstream import classify
from roller.proxy.upstream_connections import ConnectFailed

X = "tape-000001:1"
T0 = 1_000
UPSTREAM = "http://127.0.0.1:8001"
HEAD = ReceivedHead(
    t=T0,
    method="POST",
    target="/v1/messages?beta=true&key=SECRET-q",
    path="/v1/messages",
    headers=(
        ("Host", "127.0.0.1:9"),
        ("x-api-key", "sk-SECRET"),
        ("anthropic-version", "2023-06-01"),
        ("X-Roller-Sample", "s1"),
        ("content-type", "application/json"),
    ),
    query=(("beta", "true"), ("key", "SECRET-q")),
    client="127.0.0.1:5000",
    http_version="1.1",
)
REQ = RequestMeta(
    method="POST",
    path="/v1/messages",
    query=(("beta", "true"),),
    headers=(
        ("Host", "127.0.0.1:9"),
        ("anthropic-version", "2023-06-01"),
        ("content-type", "application/json"),
    ),
    redacted=Redaction(headers=("x-api-key",), query=("key",)),
    roller={"x-roller-sample": "s1"},
    upstream=UPSTREAM,
    client="127.0.0.1:5000",
    http_version="1.1",
    annotations={},
)
SSE_HEADERS = (("content-type", "text/event-stream"), ("set-cookie", "s=SECRET"))
RESP = ResponseMeta(
    status=200,
    reason="OK",
    headers=(("content-type", "text/event-stream"),),
    redacted_headers=("set-cookie",),
    http_version="1.1",
)
BODY = b'{"model":"m","stream":true}'
E1, E2 = b"event: a\ndata: {}\n\n", b"event: b\ndata: {}\n\n"
TARGET = URL(UPSTREAM + "/v1/messages")


def _whole(meta: Any) -> Any:
    """`meta`, checked to be a whole record: the recorder builds its metas from every
    field by `tuple.__new__`, so one built short (a field added, the recorder not told)
    must fail here, not only where a frame's expected meta happens to be compared."""
    assert len(meta) == len(type(meta)._fields)
    assert meta == type(meta)(**meta._asdict())
    if isinstance(meta, RequestMeta):
        _whole(meta.redacted)
    return meta


@dataclass
class FrameLog:
    """A `FrameSink` that keeps every frame as a tuple, in order (each meta checked to be
    a whole record)."""

    frames: list[tuple[Any, ...]] = field(default_factory=list)

    def request(
        self, exchange_id: str, meta: RequestMeta, *, t: int, body: Sequence[bytes]
    ) -> None:
        self.frames.append(("req", exchange_id, _whole(meta), t, tuple(body)))

    def request_body(self, exchange_id: str, data: Sequence[bytes]) -> None:
        self.frames.append(("body", exchange_id, tuple(data)))

    def annotate(self, exchange_id: str, annotations: Mapping[str, Any], *, t: int) -> None:
        self.frames.append(("ann", exchange_id, dict(annotations), t))

    def response(self, exchange_id: str, meta: ResponseMeta, *, t: int, first: bytes = b"") -> None:
        self.frames.append(("resp", exchange_id, _whole(meta), t))
        if first:
            self.chunk(exchange_id, first)

    def chunk(self, exchange_id: str, data: bytes) -> None:
        self.frames.append(("chunk", exchange_id, data))

    def end(self, exchange_id: str, meta: EndMeta, *, t: int) -> None:
        self.frames.append(("end", exchange_id, _whole(meta), t))


def _recorder(
    *,
    route: str | None = UPSTREAM,
    max_body: int = 1 << 20,
    head: ReceivedHead = HEAD,
    admit: bool = True,
    **options: Any,
) -> tuple[Recorder, FrameLog]:
    log = FrameLog()
    rec = Recorder(log, X, head, route=lambda path: route, max_body=max_body, **options)
    if admit:
        assert rec.admitted(None) is None
    return rec, log


def _forwarding(**options: Any) -> tuple[Recorder, FrameLog]:
    rec, log = _recorder(**options)
    assert rec.body_part(BODY) is None
    assert rec.body_complete() == BODY
    assert rec.decided(None) == Forward(UPSTREAM)
    return rec, log


def _relaying() -> tuple[Recorder, FrameLog]:
    rec, log = _forwarding()
    rec.upstream_head(200, "OK", SSE_HEADERS, "1.1", 2_000)
    return rec, log


def _end(outcome: str, t: int, **fields: Any) -> tuple[Any, ...]:
    meta = {"request_bytes": len(BODY), "response_bytes": 0, "client_bytes": 0, **fields}
    return ("end", X, EndMeta(outcome=outcome, **meta), t)


def _error(code: str, message: str) -> ExchangeError:
    return ExchangeError(code, message)


def _own(code: str, message: str) -> tuple[Reply, dict[str, Any]]:
    answer = OWN_ANSWERS[code]
    body = {"error": {"type": answer.error_type, "message": message}}
    return Reply(answer.status, body), body


REQ_FRAME = ("req", X, REQ, T0, (BODY,))


# -- one playbook per outcome ----------------------------------------------------------


def test_ok_stream_frames_in_order_and_the_end_event() -> None:
    rec, log = _relaying()
    rec.chunk(E1)
    rec.relayed(len(E1))
    rec.chunk(E2)
    rec.relayed(len(E2))
    rec.response_complete(3_000)
    assert log.frames == [
        REQ_FRAME,
        ("resp", X, RESP, 2_000),
        ("chunk", X, E1),
        ("chunk", X, E2),
        _end(
            "ok",
            3_000,
            client_status=200,
            upstream_status=200,
            response_bytes=len(E1 + E2),
            client_bytes=len(E1 + E2),
        ),
    ]
    assert rec.state is State.ENDED
    assert rec.end_event() == ExchangeEnd(
        X,
        "POST",
        "/v1/messages",
        "ok",
        200,
        200,
        None,
        {"x-roller-sample": "s1"},
        {},
        response_headers=RESP.headers,  # as recorded: the cookie is not there
        response_bytes=len(E1 + E2),
        client_bytes=len(E1 + E2),
        response_body=None,  # the policy did not ask for it
    )


def test_the_response_body_goes_to_the_end_hook_when_the_policy_asks() -> None:
    rec, log = _recorder()
    rec.body_complete()
    assert rec.decided(PolicyDecision(keep_response=True)) == Forward(UPSTREAM)
    rec.upstream_head(200, "OK", SSE_HEADERS, "1.1", 2_000)
    for data in (E1, E2):
        rec.chunk(data)
        rec.relayed(len(data))
    rec.client_gone("reset", 3_000)
    end = rec.end_event()
    assert end.response_body == E1 + E2 and end.outcome == "client_disconnected"
    assert not end.response_over_limit
    assert [f[0] for f in log.frames] == ["req", "resp", "chunk", "chunk", "end"]


def test_a_kept_response_is_let_go_past_its_limit() -> None:
    rec, log = _recorder(max_kept=len(E1) + 1)
    rec.body_complete()
    rec.decided(PolicyDecision(keep_response=True))
    rec.upstream_head(200, "OK", SSE_HEADERS, "1.1", 2_000)
    for data in (E1, E2):
        rec.chunk(data)
        rec.relayed(len(data))
    rec.response_complete(3_000)
    end = rec.end_event()
    assert end.response_body is None and end.response_over_limit
    # The tape has it all: only the in-memory copy was bounded.
    assert [f[2] for f in log.frames if f[0] == "chunk"] == [E1, E2]


def test_an_upstream_error_status_is_relayed_and_ok() -> None:
    rec, log = _forwarding()
    rec.upstream_head(429, "Too Many Requests", (("retry-after", "7"),), "1.1", 2_000)
    rec.chunk(b"{}")
    rec.relayed(2)
    rec.response_complete(3_000)
    resp = ResponseMeta(429, "Too Many Requests", (("retry-after", "7"),), (), "1.1")
    assert log.frames[1:] == [
        ("resp", X, resp, 2_000),
        ("chunk", X, b"{}"),
        _end("ok", 3_000, client_status=429, upstream_status=429, response_bytes=2, client_bytes=2),
    ]


def test_rejected_by_the_policy_with_its_annotations() -> None:
    rec, log = _recorder()
    rec.body_part(BODY)
    rec.body_complete()
    body = {"error": {"type": "gateway_auth", "message": "no token"}}
    decision = PolicyDecision(reject=Rejection(401, body), annotations={"gateway": {"a": 1}})
    assert rec.decided(decision) == Reply(401, body)
    assert rec.state is State.REPLYING
    rec.replied(2_000)
    req = REQ._replace(annotations={"gateway": {"a": 1}})
    error = _error("rejected", '{"error": {"type": "gateway_auth", "message": "no token"}}')
    assert log.frames == [
        ("req", X, req, T0, (BODY,)),
        _end("rejected", 2_000, error=error, client_status=401, client_body=body),
    ]
    assert rec.end_event().annotations == {"gateway": {"a": 1}}


def test_refused_on_its_head_by_the_policy_its_body_never_read() -> None:
    rec, log = _recorder(admit=False)
    body = {"error": {"type": "gateway_auth", "message": "no token"}}
    admission = Admission(reject=Rejection(401, body), annotations={"gateway": {"auth": "no"}})
    assert rec.admitted(admission) == Reply(401, body)
    for event in (lambda: rec.body_part(b"x"), rec.body_complete):  # the body is not read
        with pytest.raises(IllegalTransition):
            event()
    rec.replied(2_000)
    error = _error("rejected", '{"error": {"type": "gateway_auth", "message": "no token"}}')
    assert log.frames == [
        ("req", X, REQ._replace(annotations={"gateway": {"auth": "no"}}), T0, ()),
        _end("rejected", 2_000, error=error, client_status=401, client_body=body, request_bytes=0),
    ]


def test_refused_on_its_head_when_its_content_length_is_over_the_limit() -> None:
    announced = HEAD._replace(headers=(*HEAD.headers, ("Content-Length", "11")))
    rec, log = _recorder(max_body=10, head=announced, admit=False)
    message = "request body announces 11 bytes, over the limit of 10"
    reply, body = _own("request_too_large", message)
    assert rec.admitted(None) == reply and reply.status == 413
    rec.replied(2_000)
    assert log.frames[0][4] == () and log.frames[1] == _end(
        "rejected",
        2_000,
        error=_error("request_too_large", message),
        client_status=413,
        client_body=body,
        request_bytes=0,
    )


def test_rejected_when_the_body_grows_over_the_limit() -> None:
    rec, log = _recorder(max_body=10)
    assert rec.body_part(b"0123456789") is None
    message = "request body exceeds 10 bytes, over the limit of 10"
    reply, body = _own("request_too_large", message)
    assert rec.body_part(b"abc") == reply and reply.status == 413
    rec.replied(2_000)
    assert log.frames == [
        ("req", X, REQ, T0, (b"0123456789", b"abc")),  # recorded as far as it was read
        _end(
            "rejected",
            2_000,
            error=_error("request_too_large", message),
            client_status=413,
            client_body=body,
            request_bytes=13,
        ),
    ]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://example.com/v1/models", "the request target must be a path (origin form)"),
        ("/v1/%2e%2e/secret", UNSAFE_PATH),
        ("/v1/..%2Fsecret", UNSAFE_PATH),
    ],
)
def test_refused_on_its_head_when_the_target_is_not_a_safe_path(target: str, message: str) -> None:
    rec, log = _recorder(head=HEAD._replace(target=target, path=target), admit=False)
    reply, body = _own("bad_request_target", message)
    assert rec.admitted(Admission(annotations={"gateway": 1})) == reply and reply.status == 400
    rec.replied(2_000)
    assert log.frames[0][4] == ()  # the head only
    assert log.frames[-1] == _end(
        "rejected",
        2_000,
        error=_error("bad_request_target", message),
        client_status=400,
        client_body=body,
        request_bytes=0,
    )


def test_the_policy_raising_on_the_head_is_answered_500() -> None:
    rec, log = _recorder(admit=False)
    error = _error("policy_error", "KeyError: 'x'")
    reply, _body = _own("policy_error", error.message)
    assert rec.admitted(None, error) == reply and reply.status == 500
    rec.replied(2_000)
    assert [f[0] for f in log.frames] == ["req", "end"] and log.frames[0][4] == ()


def test_a_large_body_streams_to_the_tape_before_the_decision() -> None:
    rec, log = _recorder(admit=False, max_body=1 << 30)
    rec.admitted(Admission(annotations={"gateway": {"auth": "ok"}}, upstream="http://u:1"))
    half = b"x" * (FLUSH_BYTES // 2)
    for _ in range(5):
        rec.body_part(half)
    # Written out at the flush size, the req frame first, with what the head said.
    assert [(f[0], len(f[4] if f[0] == "req" else f[2])) for f in log.frames] == [
        ("req", 2),
        ("body", 2),
    ]
    assert log.frames[0][2].upstream == "http://u:1"
    assert log.frames[0][2].annotations == {"gateway": {"auth": "ok"}}
    assert rec.body_complete() == half * 5  # the waiting part went out first
    assert log.frames[-1] == ("body", X, (half,))
    decision = PolicyDecision(annotations={"gateway": {"auth": "ok", "session_id": "s"}})
    assert rec.decided(decision) == Forward("http://u:1")
    # The decision's annotations come after the req frame, in an ann frame.
    assert log.frames[-1] == ("ann", X, {"gateway": {"auth": "ok", "session_id": "s"}}, T0)
    assert sum(
        len(p)
        for f in log.frames
        for p in (f[4] if f[0] == "req" else f[2] if f[0] == "body" else ())
    ) == 5 * len(half)
    rec.client_gone("gone", 3_000)
    assert rec.end_event().annotations == {"gateway": {"auth": "ok", "session_id": "s"}}


def test_configured_names_are_redacted_from_the_request_and_the_response() -> None:
    head = HEAD._replace(
        headers=(*HEAD.headers, ("X-Key", "secret-h")), query=(*HEAD.query, ("k", "secret-q"))
    )
    rec, log = _recorder(head=head, redactor=Redactor(["x-key"], ["K"]))
    rec.body_complete()
    rec.decided(None)
    rec.upstream_head(200, "OK", (("x-key", "echo"),), "1.1", 2_000)
    req, resp = log.frames[0][2], log.frames[1][2]
    assert req.redacted == Redaction(headers=("x-api-key", "x-key"), query=("key", "k"))
    assert "secret" not in repr(req) and resp.redacted_headers == ("x-key",)


def test_no_upstream_for_the_endpoint() -> None:
    rec, log = _recorder(route=None)
    rec.body_part(BODY)
    rec.body_complete()
    message = "no upstream is configured for POST /v1/messages"
    reply, body = _own("no_upstream", message)
    assert rec.decided(None) == reply and reply.status == 502
    rec.replied(2_000)
    assert log.frames == [
        ("req", X, REQ._replace(upstream=None), T0, (BODY,)),
        _end(
            "no_upstream",
            2_000,
            error=_error("no_upstream", message),
            client_status=502,
            client_body=body,
        ),
    ]


def test_the_policy_chooses_the_upstream() -> None:
    rec, log = _recorder(route=None)
    rec.body_complete()
    assert rec.decided(PolicyDecision(upstream="http://special:1")) == Forward("http://special:1")
    assert log.frames[0][2].upstream == "http://special:1"


@pytest.mark.parametrize(
    ("exc", "outcome", "code", "status"),
    [
        (ConnectFailed(TimeoutError()), "upstream_connect_error", "connect_timeout", 502),
        (ConnectionResetError("reset"), "upstream_disconnected", "connection_lost", 502),
        (TimeoutError(), "upstream_timeout", "read_timeout", 504),
    ],
)
def test_upstream_failures_before_the_head_are_answered(
    exc: BaseException, outcome: str, code: str, status: int
) -> None:
    failure = classify(exc, TARGET)
    rec, log = _forwarding()
    reply = rec.upstream_failed(
        failure.outcome, failure.error, failure.client_status, failure.client_body(), 2_000
    )
    assert reply == Reply(status, failure.client_body())
    rec.replied(3_000)
    assert failure.error.code == code
    assert log.frames == [
        REQ_FRAME,
        _end(outcome, 3_000, error=failure.error, client_status=status, client_body=reply.body),
    ]


@pytest.mark.parametrize(
    ("outcome", "code"),
    [("upstream_disconnected", "incomplete_body"), ("upstream_timeout", "read_timeout")],
)
def test_upstream_dying_or_stalling_mid_body_aborts_the_client(outcome: Any, code: str) -> None:
    rec, log = _relaying()
    rec.chunk(E1)
    rec.relayed(len(E1))
    error = _error(code, "gone")
    assert rec.upstream_failed(outcome, error, 502, {"x": 1}, 3_000) is ABORT
    assert log.frames[2:] == [
        ("chunk", X, E1),
        _end(
            outcome,
            3_000,
            error=error,
            client_status=200,
            upstream_status=200,
            response_bytes=len(E1),
            client_bytes=len(E1),
        ),
    ]


def test_client_gone_mid_body_records_the_head_and_what_arrived() -> None:
    rec, log = _recorder()
    rec.body_part(b'{"mod')
    rec.body_failed("Connection reset by peer", 2_000)
    assert log.frames == [
        ("req", X, REQ, T0, (b'{"mod',)),
        _end(
            "client_disconnected",
            2_000,
            error=_error("client_disconnected", "Connection reset by peer"),
            request_bytes=5,
        ),
    ]


def test_client_gone_while_the_policy_decides() -> None:
    rec, log = _recorder()
    rec.body_part(BODY)
    rec.body_complete()
    rec.client_gone("the client closed the connection", 2_000)
    assert log.frames == [
        REQ_FRAME,  # no annotations: the policy never answered
        _end(
            "client_disconnected",
            2_000,
            error=_error("client_disconnected", "the client closed the connection"),
        ),
    ]


def test_client_gone_while_the_upstream_thinks() -> None:
    rec, log = _forwarding()
    rec.client_gone("the client closed the connection", 2_000)
    assert log.frames == [
        REQ_FRAME,
        _end(
            "client_disconnected",
            2_000,
            error=_error("client_disconnected", "the client closed the connection"),
        ),
    ]
    assert rec.end_event().client_status is None


def test_client_gone_mid_response_counts_what_it_got() -> None:
    rec, log = _relaying()
    rec.chunk(E1)
    rec.relayed(len(E1))
    rec.chunk(E2)  # recorded before the write that failed
    rec.client_gone("Cannot write to closing transport", 3_000)
    assert log.frames[-2:] == [
        ("chunk", X, E2),
        _end(
            "client_disconnected",
            3_000,
            error=_error("client_disconnected", "Cannot write to closing transport"),
            client_status=200,
            upstream_status=200,
            response_bytes=len(E1 + E2),
            client_bytes=len(E1),
        ),
    ]


def test_client_gone_during_roller_s_own_answer() -> None:
    rec, log = _recorder(route=None)
    rec.body_complete()
    rec.decided(None)
    rec.client_gone("reset", 2_000)
    assert log.frames[-1] == _end(
        "client_disconnected",
        2_000,
        error=_error("client_disconnected", "reset"),
        client_status=502,  # the status was being sent
        request_bytes=0,
    )


def test_client_gone_before_the_head_was_judged_records_the_head() -> None:
    rec, log = _recorder(admit=False)
    rec.client_gone("reset", 2_000)
    assert [f[0] for f in log.frames] == ["req", "end"] and log.frames[0][4] == ()


@pytest.mark.parametrize("setup", ["receiving", "forwarding", "relaying"])
def test_shutdown_in_flight(setup: str) -> None:
    if setup == "receiving":
        rec, log = _recorder()
        rec.body_part(BODY)
    elif setup == "forwarding":
        rec, log = _forwarding()
    else:
        rec, log = _relaying()
    rec.shutdown(9_000)
    assert log.frames[0] == REQ_FRAME
    (end,) = [f for f in log.frames if f[0] == "end"]
    assert end[2].outcome == "proxy_shutdown" and end[3] == 9_000
    assert end[2].error == _error("proxy_shutdown", "proxy stopped")


def test_the_policy_raising_is_a_proxy_error_answered_500() -> None:
    rec, log = _recorder()
    rec.body_part(BODY)
    rec.body_complete()
    error = _error("policy_error", "ValueError: database down")
    reply, body = _own("policy_error", error.message)
    assert rec.decided(None, error) == reply and reply.status == 500
    rec.replied(2_000)
    assert log.frames == [
        REQ_FRAME,
        _end("proxy_error", 2_000, error=error, client_status=500, client_body=body),
    ]


@pytest.mark.parametrize("setup", ["receiving", "deciding", "forwarding"])
def test_a_bug_before_any_response_is_answered_502(setup: str) -> None:
    rec, log = _recorder()
    if setup != "receiving":
        rec.body_part(BODY)
        rec.body_complete()
    if setup == "forwarding":
        rec.decided(None)
    error = _error("proxy_error", "KeyError: 'x'")
    reply, body = _own("proxy_error", error.message)
    assert rec.failed(error, 2_000) == reply and reply.status == 502
    rec.replied(3_000)
    assert [f[0] for f in log.frames] == ["req", "end"]
    assert log.frames[-1][2].outcome == "proxy_error"
    assert log.frames[-1][2].client_body == body


def test_a_bug_mid_response_aborts_the_client() -> None:
    rec, log = _relaying()
    error = _error("proxy_error", "RuntimeError: boom")
    assert rec.failed(error, 3_000) is ABORT
    assert log.frames[-1] == _end(
        "proxy_error", 3_000, error=error, client_status=200, upstream_status=200
    )


# -- illegal transitions ----------------------------------------------------------------


def test_events_out_of_their_state_are_refused_and_write_nothing() -> None:
    rec, log = _recorder()
    for event in (
        lambda: rec.admitted(None),
        lambda: rec.decided(None),
        lambda: rec.upstream_head(200, "OK", (), "1.1", 1),
        lambda: rec.chunk(b"x"),
        lambda: rec.relayed(1),
        lambda: rec.response_complete(1),
        lambda: rec.replied(1),
        rec.end_event,
    ):
        with pytest.raises(IllegalTransition):
            event()
    assert log.frames == []
    rec.client_gone("gone", 1)
    for event in (
        lambda: rec.client_gone("again", 2),
        lambda: rec.shutdown(2),
        lambda: rec.failed(_error("proxy_error", "x"), 2),
        lambda: rec.body_part(b"x"),
        rec.body_complete,
    ):
        with pytest.raises(IllegalTransition):
            event()
    assert [f[0] for f in log.frames] == ["req", "end"]  # exactly one end frame


# -- invariants over any sequence of events -----------------------------------------------

EVENTS = {
    "admitted": lambda r: r.admitted(None),
    "admitted_reject": lambda r: r.admitted(Admission(reject=Rejection(401, {}))),
    "body_part": lambda r: r.body_part(b"ab"),
    "body_complete": lambda r: r.body_complete(),
    "body_failed": lambda r: r.body_failed("reset", 5),
    "decided": lambda r: r.decided(None),
    "decided_reject": lambda r: r.decided(PolicyDecision(reject=Rejection(403, {}))),
    "policy_error": lambda r: r.decided(None, _error("policy_error", "boom")),
    "upstream_head": lambda r: r.upstream_head(200, "OK", (), "1.1", 5),
    "chunk": lambda r: r.chunk(b"data"),
    "relayed": lambda r: r.relayed(4),
    "response_complete": lambda r: r.response_complete(5),
    "upstream_failed": lambda r: r.upstream_failed(
        "upstream_timeout", _error("read_timeout", "slow"), 504, {}, 5
    ),
    "replied": lambda r: r.replied(5),
    "client_gone": lambda r: r.client_gone("gone", 5),
    "shutdown": lambda r: r.shutdown(5),
    "failed": lambda r: r.failed(_error("proxy_error", "bug"), 5),
    "end_event": lambda r: r.end_event(),
}
# The recorder's table entry each of those events is checked against.
TABLE_KEY = {name: name for name in EVENTS} | {
    "admitted_reject": "admitted",
    "decided_reject": "decided",
    "policy_error": "decided",
}
# A way into each state.
INTO = {
    State.ADMITTING: [],
    State.RECEIVING_BODY: ["admitted"],
    State.DECIDING: ["admitted", "body_complete"],
    State.FORWARDING: ["admitted", "body_complete", "decided"],
    State.RELAYING: ["admitted", "body_complete", "decided", "upstream_head"],
    State.REPLYING: ["admitted_reject"],
    State.ENDED: ["client_gone"],
}


def test_the_table_names_every_event_the_recorder_has() -> None:
    public = {
        name
        for name, member in vars(Recorder).items()
        if callable(member) and not name.startswith("_")
    }
    assert set(ALLOWED) == public == set(TABLE_KEY.values())


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.value)
@pytest.mark.parametrize("event", sorted(EVENTS))
def test_each_event_is_accepted_exactly_in_the_states_of_the_table(
    state: State, event: str
) -> None:
    rec, log = _recorder(admit=False)
    for step in INTO[state]:
        EVENTS[step](rec)
    assert rec.state is state
    if state in ALLOWED[TABLE_KEY[event]]:
        EVENTS[event](rec)
    else:
        before = list(log.frames)
        with pytest.raises(IllegalTransition, match=f"^{TABLE_KEY[event]} in state {state.value}$"):
            EVENTS[event](rec)
        assert log.frames == before and rec.state is state


@settings(max_examples=400, deadline=None)
@given(
    events=st.lists(st.sampled_from(sorted(EVENTS)), max_size=14),
    max_body=st.sampled_from([1, 3, 1 << 20]),
    routed=st.booleans(),
)
def test_any_sequence_keeps_the_rules(events: list[str], max_body: int, routed: bool) -> None:
    rec, log = _recorder(max_body=max_body, route=UPSTREAM if routed else None, admit=False)
    for name in events:
        before = len(log.frames)
        try:
            EVENTS[name](rec)
        except IllegalTransition:
            assert len(log.frames) == before  # a refused event writes nothing
        kinds = [f[0] for f in log.frames]
        # Record first: the req frame opens the exchange; it exists past DECIDING, never
        # while the head is being judged; body and ann frames only ever follow it.
        if rec.state in (State.FORWARDING, State.RELAYING, State.REPLYING, State.ENDED):
            assert kinds[:1] == ["req"]
        if rec.state is State.ADMITTING:
            assert kinds == []
        assert kinds.count("req") <= 1 and kinds.count("resp") <= 1
        assert all(k == "req" for k in kinds[:1])
        if rec.state in (State.FORWARDING, State.RELAYING):  # every byte read is taped
            taped = sum(len(p) for f in log.frames if f[0] in ("req", "body") for p in f[-1])
            assert taped == rec.request_bytes
        # Exactly one end frame once ended, none before, nothing after it.
        assert kinds.count("end") == (1 if rec.ended else 0)
        assert "end" not in kinds[:-1]
        if "resp" in kinds:
            assert all(k != "chunk" for k in kinds[: kinds.index("resp")])
    if rec.ended:
        end = log.frames[-1][2]
        chunks = sum(len(f[2]) for f in log.frames if f[0] == "chunk")
        assert end.response_bytes == chunks and end.client_bytes <= chunks
        assert rec.end_event().outcome == end.outcome

"""The recorder without sockets: each playbook is a sequence of events and the exact
frames (and answers) it must produce, one per outcome of docs/architecture.md's table and
per edge case; then the invariants over any sequence of events at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from roller.capture.tape import EndMeta, ExchangeError, Redaction, RequestMeta, ResponseMeta
from roller.proxy import ExchangeEnd, PolicyDecision, Rejection
from roller.proxy.recorder import (
    ABORT,
    ALLOWED,
    OWN_ANSWERS,
    Forward,
    IllegalTransition,
    ReceivedHead,
    Recorder,
    Reply,
    State,
)
from roller.proxy.upstream import classify

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


@dataclass
class FrameLog:
    """A `FrameSink` that keeps every frame as a tuple, in order."""

    frames: list[tuple[Any, ...]] = field(default_factory=list)

    def request(self, exchange_id: str, meta: RequestMeta, *, t: int, body: bytes) -> None:
        self.frames.append(("req+body", exchange_id, meta, t, body))

    def response(self, exchange_id: str, meta: ResponseMeta, *, t: int) -> None:
        self.frames.append(("resp", exchange_id, meta, t))

    def chunk(self, exchange_id: str, data: bytes) -> None:
        self.frames.append(("chunk", exchange_id, data))

    def end(self, exchange_id: str, meta: EndMeta, *, t: int) -> None:
        self.frames.append(("end", exchange_id, meta, t))


def _recorder(
    *, route: str | None = UPSTREAM, max_body: int = 1 << 20, head: ReceivedHead = HEAD
) -> tuple[Recorder, FrameLog]:
    log = FrameLog()
    return Recorder(log, X, head, route=lambda path: route, max_body=max_body), log


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


REQ_FRAME = ("req+body", X, REQ, T0, BODY)


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
    assert [f[0] for f in log.frames] == ["req+body", "resp", "chunk", "chunk", "end"]


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
        ("req+body", X, req, T0, BODY),
        _end("rejected", 2_000, error=error, client_status=401, client_body=body),
    ]
    assert rec.end_event().annotations == {"gateway": {"a": 1}}


def test_rejected_when_the_body_is_over_the_limit() -> None:
    rec, log = _recorder(max_body=10)
    assert rec.body_part(b"0123456789") is None
    message = "request body exceeds 10 bytes"
    reply, body = _own("request_too_large", message)
    assert rec.body_part(b"abc") == reply and reply.status == 413
    rec.replied(2_000)
    assert log.frames == [
        ("req+body", X, REQ, T0, b"0123456789abc"),  # recorded as far as it arrived
        _end(
            "rejected",
            2_000,
            error=_error("request_too_large", message),
            client_status=413,
            client_body=body,
            request_bytes=13,
        ),
    ]


def test_rejected_when_the_target_is_not_a_path() -> None:
    url = "http://example.com/v1/models"
    absolute = HEAD._replace(target=url, path=url)
    rec, log = _recorder(head=absolute)
    rec.body_complete()
    message = "the request target must be a path (origin form)"
    reply, body = _own("bad_request_target", message)
    assert rec.decided(None) == reply and reply.status == 400
    rec.replied(2_000)
    assert log.frames[-1] == _end(
        "rejected",
        2_000,
        error=_error("bad_request_target", message),
        client_status=400,
        client_body=body,
        request_bytes=0,
    )


def test_no_upstream_for_the_endpoint() -> None:
    rec, log = _recorder(route=None)
    rec.body_part(BODY)
    rec.body_complete()
    message = "no upstream is configured for POST /v1/messages"
    reply, body = _own("no_upstream", message)
    assert rec.decided(None) == reply and reply.status == 502
    rec.replied(2_000)
    assert log.frames == [
        ("req+body", X, REQ._replace(upstream=None), T0, BODY),
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
        (aiohttp.ConnectionTimeoutError(), "upstream_connect_error", "connect_timeout", 502),
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
        ("req+body", X, REQ, T0, b'{"mod'),
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
    assert [f[0] for f in log.frames] == ["req+body", "end"]
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
    assert [f[0] for f in log.frames] == ["req+body", "end"]  # exactly one end frame


# -- invariants over any sequence of events -----------------------------------------------

EVENTS = {
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
    "decided_reject": "decided",
    "policy_error": "decided",
}
# A way into each state.
INTO = {
    State.RECEIVING_BODY: [],
    State.DECIDING: ["body_complete"],
    State.FORWARDING: ["body_complete", "decided"],
    State.RELAYING: ["body_complete", "decided", "upstream_head"],
    State.REPLYING: ["body_complete", "decided_reject"],
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
    rec, log = _recorder()
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
    rec, log = _recorder(max_body=max_body, route=UPSTREAM if routed else None)
    for name in events:
        before = len(log.frames)
        try:
            EVENTS[name](rec)
        except IllegalTransition:
            assert len(log.frames) == before  # a refused event writes nothing
        kinds = [f[0] for f in log.frames]
        # Record first: the req frame opens the exchange, exactly when it should exist.
        assert (kinds[:1] == ["req+body"]) == (
            rec.state not in (State.RECEIVING_BODY, State.DECIDING)
        )
        assert kinds.count("req+body") <= 1 and kinds.count("resp") <= 1
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

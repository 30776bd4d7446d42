"""The status rulebook as a table: exchange facts in, execution and response-capture
statuses out, one row per way an exchange can end (docs/protocol.md, "Statuses")."""

from __future__ import annotations

import re

import pytest

from roller.capture import statuses
from roller.capture.statuses import (
    CUT_SHORT,
    IN_FLIGHT,
    NOT_ANSWERED,
    ExchangeFacts,
    execution_status,
    response_capture_status,
    response_was_whole,
)
from roller.capture.tape import OUTCOMES

BODY = 100


def facts(
    outcome: str | None,
    status: int | None = 200,
    *,
    streamed: bool = True,
    client: int | None = BODY,
    sent: int | None = BODY,
    terminal: bool | None = True,
) -> ExchangeFacts:
    return ExchangeFacts.of(
        outcome=outcome,
        status=status,
        streamed=streamed,
        client_bytes=client,
        response_bytes=sent,
        body_bytes=BODY,
        terminal=terminal,
    )


CASES = [
    # (facts, execution, response capture, why)
    (facts("ok"), "completed", "complete", "a whole stream, relayed"),
    (facts("ok", streamed=False), "completed", "complete", "a whole JSON body"),
    (facts("ok", terminal=None), "completed", "complete", "a side request no codec reads"),
    (facts("ok", terminal=False), "failed", "complete", "a stream without its terminal event"),
    (facts("ok", 400, terminal=False), "failed", "complete", "an upstream 4xx, relayed"),
    (facts("ok", 529, terminal=False), "failed", "complete", "an upstream 5xx, relayed"),
    (facts("ok", 404, terminal=None), "failed", "complete", "a side request's 404"),
    (facts("client_disconnected"), "completed", "complete", "left after the whole stream"),
    (
        facts("client_disconnected", client=BODY - 1),
        "interrupted",
        "partial",
        "left before the last byte reached it",
    ),
    (
        facts("client_disconnected", terminal=False),
        "interrupted",
        "partial",
        "left mid-stream",
    ),
    (
        facts("client_disconnected", streamed=False),
        "interrupted",
        "partial",
        "left during a JSON body (only a stream's end is seen)",
    ),
    (
        facts("client_disconnected", 500, terminal=False),
        "interrupted",
        "partial",
        "left during an error",
    ),
    (
        facts("client_disconnected", None, client=0, sent=0, terminal=None),
        "interrupted",
        "missing",
        "left while the upstream was thinking",
    ),
    (facts("proxy_shutdown", terminal=False), "interrupted", "partial", "stopped mid-stream"),
    (facts("proxy_shutdown"), "completed", "complete", "stopped after the whole stream"),
    (
        facts("proxy_shutdown", None, client=0, sent=0, terminal=None),
        "interrupted",
        "missing",
        "stopped before the head",
    ),
    (facts(None, client=None, sent=None), "interrupted", "partial", "the tape stopped in flight"),
    (
        facts("upstream_connect_error", None, client=0, sent=0, terminal=None),
        "failed",
        "missing",
        "upstream down",
    ),
    (
        facts("upstream_disconnected", 200, client=40, sent=40, terminal=False),
        "failed",
        "partial",
        "upstream died mid-body",
    ),
    (
        facts("upstream_disconnected", None, client=0, sent=0, terminal=None),
        "failed",
        "missing",
        "upstream closed before the head",
    ),
    (
        facts("upstream_timeout", 200, client=40, sent=40, terminal=False),
        "failed",
        "partial",
        "idle timeout mid-body",
    ),
    (
        facts("upstream_timeout", None, client=0, sent=0, terminal=None),
        "failed",
        "missing",
        "idle timeout before the head",
    ),
    (facts("rejected", None, terminal=None), "failed", "missing", "a policy rejection"),
    (facts("no_upstream", None, terminal=None), "failed", "missing", "no upstream"),
    (facts("proxy_error", None, terminal=None), "failed", "missing", "a policy error"),
    (
        facts("proxy_error", 200, client=10, terminal=False),
        "failed",
        "partial",
        "a proxy bug mid-body",
    ),
]


@pytest.mark.parametrize(("f", "execution", "capture", "why"), CASES, ids=[c[3] for c in CASES])
def test_rulebook(f: ExchangeFacts, execution: str, capture: str, why: str) -> None:
    assert (execution_status(f), response_capture_status(f)) == (execution, capture)


def test_every_outcome_is_covered_and_classified() -> None:
    covered = {c[0].outcome for c in CASES}
    assert covered == {*OUTCOMES, IN_FLIGHT}
    assert CUT_SHORT | NOT_ANSWERED | {"ok"} == {*OUTCOMES, IN_FLIGHT}
    assert not CUT_SHORT & NOT_ANSWERED


def test_relayed_all_needs_every_count_equal() -> None:
    assert response_was_whole(facts("client_disconnected"))
    assert not response_was_whole(facts("client_disconnected", sent=BODY + 1))
    assert not response_was_whole(facts("client_disconnected", client=None, sent=None))
    assert not response_was_whole(facts("client_disconnected", 400))


def test_the_docstring_names_every_outcome() -> None:
    doc = statuses.__doc__ or ""
    for outcome in OUTCOMES:
        if outcome != "ok":
            assert re.search(rf"`{outcome}`", doc), outcome


def test_the_remembered_statuses_are_the_rulebooks() -> None:
    """`statuses_of` (remembered per distinct facts, for the gateway's rows) gives what
    the two rules give over `ExchangeFacts.of`, for every combination, asked twice."""
    for _ in range(2):
        for outcome in OUTCOMES:
            for status in (None, 200, 302, 400, 503):
                for streamed in (False, True):
                    for client, sent in ((BODY, BODY), (None, BODY), (BODY - 1, BODY)):
                        for terminal in (None, False, True):
                            f = facts(outcome, status, streamed=streamed, client=client,
                                      sent=sent, terminal=terminal)  # fmt: skip
                            relayed = statuses.relayed_all(client, sent, BODY)
                            assert relayed == f.relayed_all
                            got = statuses.statuses_of(outcome, status, streamed, relayed, terminal)
                            assert got == (execution_status(f), response_capture_status(f))

"""Header plans give exactly what the header-by-header rules give, on varied header lists,
and stay bounded."""

from __future__ import annotations

import itertools
import random

import pytest

from roller.proxy import header_plan
from roller.proxy.header_plan import HeaderPlans
from roller.proxy.headers import client_response_headers, upstream_request_headers
from roller.proxy.redaction import DEFAULT_REDACTOR, Redactor, roller_evidence

# Every kind of name a rule treats apart, in several spellings.
NAMES = [
    "Host",
    "Content-Length",
    "content-length",
    "Connection",
    "connection",
    "Keep-Alive",
    "Transfer-Encoding",
    "TE",
    "Upgrade",
    "Expect",
    "Accept-Encoding",
    "accept-encoding",
    "Authorization",
    "x-api-key",
    "Cookie",
    "Set-Cookie",
    "X-Goog-Api-Key",
    "x-session-token",
    "X-Roller-Sample",
    "x-roller-sample",
    "x-roller-agent",
    "X-Key",
    "anthropic-version",
    "Content-Type",
    "User-Agent",
    "thread-id",
    "x-stainless-lang",
    "X-Hop",
    "anthropic-ratelimit-tokens-remaining",
]
VALUES = ["1", "keep-alive", "close, X-Hop", "X-Hop, x-stainless-lang", "gzip, br", "zstd", "*"]


def _header_lists(count: int) -> list[list[tuple[str, str]]]:
    rng = random.Random(16)
    lists = [[], [("Host", "h")], [(n, "v") for n in NAMES]]
    for _ in range(count):
        names = rng.choices(NAMES, k=rng.randint(1, 14))
        lists.append([(n, rng.choice(VALUES)) for n in names])
    return lists


@pytest.mark.parametrize("redactor", [DEFAULT_REDACTOR, Redactor(["x-key"], ["k"])])
def test_plans_agree_with_the_header_by_header_rules(redactor: Redactor) -> None:
    plans = HeaderPlans(redactor)
    for pairs in _header_lists(400):
        for _ in range(2):  # built, then from the cache
            plan = plans.request(pairs)
            recorded = redactor.headers(pairs)
            assert plan.recorded(pairs) == recorded.kept
            assert plan.removed == recorded.removed
            assert plan.evidence(pairs) == roller_evidence(pairs)
            lengths = [v for n, v in pairs if n.lower() == "content-length"]
            announced = int(lengths[0]) if lengths and lengths[0].isdigit() else None
            assert plan.announced(pairs) == announced
            assert plan.upstream(pairs) == list(upstream_request_headers(pairs).items())
            changed = plan.upstream(pairs, {"x-api-key": "real"}.items(), ("authorization",))
            assert not isinstance(changed, list)
            reference = upstream_request_headers(
                pairs, set_headers={"x-api-key": "real"}.items(), remove_headers=("authorization",)
            )
            assert list(changed.items()) == list(reference.items())
            response = plans.response(pairs)
            assert response.recorded(pairs) == recorded.kept
            assert response.removed == recorded.removed
            assert response.relayed(pairs) == tuple(client_response_headers(pairs).items())


CHANGES = [
    ({"x-api-key": "real"}, ("x-api-key", "authorization")),  # a gateway's: set one removed
    ({"Authorization": "Bearer real"}, ("x-api-key", "authorization", "x-goog-api-key")),
    ({"x-api-key": "real"}, ("authorization",)),  # sets one that may be forwarded
    ({"X-Extra": "1"}, ()),
    ({}, ("content-type",)),
    ({"x-api-key": "real"}, ("accept-encoding",)),
    ({"Accept-Encoding": "identity"}, ()),
]


@pytest.mark.parametrize("redactor", [DEFAULT_REDACTOR, Redactor(["x-key"], ["k"])])
def test_a_decisions_changes_picked_in_one_call_are_the_multidicts(redactor: Redactor) -> None:
    plans = HeaderPlans(redactor)
    for pairs, (set_headers, remove) in itertools.product(_header_lists(300), CHANGES):
        for _ in range(2):  # built, then from the cache
            plan = plans.request(pairs)
            got = plans.upstream(plan, pairs, set_headers, remove)
            reference = upstream_request_headers(
                pairs, set_headers=set_headers.items(), remove_headers=remove
            )
            assert list(got.items() if not isinstance(got, list) else got) == list(
                reference.items()
            ), (pairs, set_headers, remove)
    # the gateway's changes are picked, not built through a multidict
    gateway = [("Host", "h"), ("x-api-key", "rlr_token"), ("Content-Type", "j")]
    picked = plans.upstream(plans.request(gateway), gateway, {"x-api-key": "real"}, ("x-api-key",))
    assert isinstance(picked, list)
    assert [n for n, _ in picked] == ["Content-Type", "Accept-Encoding", "x-api-key"]


def test_a_connection_value_gets_its_own_plan() -> None:
    plans = HeaderPlans()
    names = ("Connection", "X-Hop", "thread-id")
    hop = list(zip(names, ("X-Hop", "1", "t"), strict=True))
    keep = list(zip(names, ("keep-alive", "1", "t"), strict=True))
    assert [n for n, _ in plans.request(hop).upstream(hop)] == ["thread-id", "Accept-Encoding"]
    assert [n for n, _ in plans.request(keep).upstream(keep)] == [
        "X-Hop",
        "thread-id",
        "Accept-Encoding",
    ]
    assert plans.response(hop).relayed(hop) == (("thread-id", "t"),)
    assert plans.response(keep).relayed(keep) == (("X-Hop", "1"), ("thread-id", "t"))


def test_the_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(header_plan, "MAX_PLANS", 8)
    plans = HeaderPlans()
    for i, j in itertools.product(range(5), range(5)):
        pairs = [(f"x-a{i}", "1"), (f"x-b{j}", "2"), ("Authorization", "k")]
        assert plans.request(pairs).recorded(pairs) == tuple(pairs[:2])
        assert plans.response(pairs).relayed(pairs) == tuple(pairs)
    assert len(plans._requests) == 8 and len(plans._responses) == 8
    assert len(plans._plain_requests) == 8 and len(plans._plain_responses) == 8

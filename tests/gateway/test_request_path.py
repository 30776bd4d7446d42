"""What the gateway's request path costs the store: authentication none, a known session
none after its first resolution, call rows batched by the background writer.

Issue 16, item 1: a store round trip per request made the gateway 13x the proxy's CPU.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from sqlalchemy.dialects import sqlite

from roller.gateway import policy as policy_module
from roller.gateway.config import Client, parse_config
from roller.gateway.derivation import SessionPlan, SourceKey
from roller.gateway.policy import GatewayPolicy, requested_model
from roller.gateway.request_body import parse_json_body
from roller.gateway.resolutions import ResolutionCache
from roller.gateway.store import Resolution
from roller.gateway.store.calls import CallInsert
from roller.gateway.store.row_parts import RowMaker
from roller.gateway.tokens import new_token, token_sha256
from roller.harnesses import identify
from roller.proxy import RequestHead
from roller.wire.endpoints import endpoint_for
from tests.gateway.conftest import ALICE_OC, GatewayFactory, one_client_policy
from tests.gateway.test_sessions_http import opencode
from tests.gateway.test_store import plan as store_plan


class NoStore:
    """A store that fails the test the moment anything of it is used (but its row maker:
    values bound in memory, no database)."""

    row_maker = RowMaker(CallInsert.of(sqlite.dialect()), sqlite.dialect())

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the request path used the store ({name})")


def _head(headers: dict[str, str]) -> RequestHead:
    return RequestHead(
        method="POST",
        path="/v1/messages",
        query=(),
        headers=CIMultiDictProxy(CIMultiDict(headers)),
        client="127.0.0.1",
    )


def test_authentication_is_a_table_lookup_without_the_store(tmp_path: Path) -> None:
    token = new_token()
    raw = {
        "upstreams": {"anthropic": {"url": "http://127.0.0.1:9"}},
        "clients": [
            {
                "token_sha256": token_sha256(token),
                "principal": "alice",
                "account": "acme",
                "harness": "claude-code",
            }
        ],
    }
    config = parse_config(raw, base=tmp_path)
    policy = GatewayPolicy(
        config,
        NoStore(),  # type: ignore[arg-type]
        upstreams={"anthropic": "http://127.0.0.1:9"},
        keys={"anthropic": "sk-real"},
        tape_dir=tmp_path,
    )
    ok = asyncio.run(policy.admit(_head({"x-api-key": token})))
    assert ok.reject is None and ok.annotations["gateway"]["principal"] == "alice"
    unknown = asyncio.run(policy.admit(_head({"x-api-key": new_token()})))
    assert unknown.reject is not None and unknown.reject.status == 401
    missing = asyncio.run(policy.admit(_head({})))
    assert missing.reject is not None and missing.reject.status == 401


def test_a_token_already_admitted_is_not_read_again_and_an_unknown_one_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy, token = one_client_policy(NoStore(), tmp_path)
    reads: list[object] = []
    real = policy_module.presented_in

    def counted(*args: Any) -> Any:
        reads.append(args)
        return real(*args)

    monkeypatch.setattr(policy_module, "presented_in", counted)

    def admit(headers: dict[str, str], query: tuple[tuple[str, str], ...] = ()) -> Any:
        head = _head(headers)
        return asyncio.run(
            policy.admit(RequestHead(head.method, head.path, query, head.headers, None))
        )

    for _ in range(3):
        ok = admit({"x-api-key": token})
        assert ok.reject is None and ok.annotations["gateway"]["principal"] == "alice"
        assert ok.annotations["gateway"]["family"] == "anthropic"
    assert len(reads) == 1  # read once, then known by its headers
    assert admit({"authorization": f"Bearer {token}"}).reject is None
    assert len(reads) == 2  # other headers: read again
    assert admit({"x-api-key": token}, (("key", token),)).reject is None
    assert admit({"x-api-key": token}, (("key", token),)).reject is None
    assert len(reads) == 4  # a query may carry a token: never taken from the kept ones
    other = new_token()
    for _ in range(2):
        refused = admit({"x-api-key": other})
        assert refused.reject is not None and refused.reject.status == 401
    both = {"x-api-key": token, "authorization": f"Bearer {other}"}
    for _ in range(2):
        ambiguous = admit(both)
        assert ambiguous.reject is not None and ambiguous.reject.status == 401
    assert len(reads) == 8  # refusals are never kept


# -- the cache of resolved plans -----------------------------------------------------------

CLIENT = Client("a" * 64, "alice", "acme", "opencode")
OWN = SourceKey("opencode", "ses_child")
PARENT = SourceKey("opencode", "ses_parent")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plan(own: SourceKey | None = OWN, parent: SourceKey | None = PARENT) -> SessionPlan:
    role = None if own is None else "child" if parent is not None else "root"
    return SessionPlan(CLIENT, own, parent, role, "opencode-headers")  # type: ignore[arg-type]


def _resolution(parent: str | None, refused: str | None = None) -> Resolution:
    return Resolution("id-own", parent, OWN, refused)


def test_a_resolution_with_a_parent_is_kept_and_touched_at_most_once_a_second() -> None:
    clock = Clock()
    cache = ResolutionCache(inactivity_seconds=1800, clock=clock)
    assert cache.get(_plan()) is None
    cache.put(_plan(), _resolution("id-parent"))
    touches = []
    for _ in range(50):  # 5 seconds of requests every 0.1 s
        clock.now += 0.1
        hit = cache.get(_plan())
        assert hit is not None and hit.resolution == _resolution("id-parent")
        touches.append(hit.touch_due)
    assert 4 <= sum(touches) <= 5
    clock.now += 10_000  # never expires
    assert cache.get(_plan()) is not None


def test_what_may_still_change_is_refreshed_or_kept_briefly_and_a_refusal_never() -> None:
    clock = Clock()
    cache = ResolutionCache(inactivity_seconds=2, clock=clock)
    assert cache.ttl == 0.5  # a quarter of the inactivity window, at most a second
    root, source = _plan(parent=None), _plan(own=None, parent=None)
    cache.put(root, _resolution(None))
    cache.put(source, Resolution("id-src", None, SourceKey("source", "opencode#1")))
    clock.now += 0.4
    hit = cache.get(root)
    assert hit is not None and not hit.touch_due  # the store touched it on resolving
    assert cache.get(source) is not None
    clock.now += 0.2
    # The root is served on and refreshed through a touch; the source-keyed row is not.
    refresh = cache.get(root)
    assert refresh is not None and refresh.touch_due and cache.get(source) is None
    hit = cache.get(root)
    assert hit is not None and not hit.touch_due  # one refresh per ttl
    cache.refreshed("id-own", "id-parent")  # the touch's batch read a parent back
    hit = cache.get(root)
    assert hit is not None and hit.resolution.parent_session_id == "id-parent"
    clock.now += 10_000
    assert cache.get(root) is not None  # with its parent, it lasts
    # Every refused claim is audited by the store, so it always goes there.
    cache.put(_plan(), _resolution("id-other", refused="rewrite"))
    assert cache.get(_plan()) is None


def test_learning_of_a_parent_drops_the_answers_that_said_none() -> None:
    cache = ResolutionCache(inactivity_seconds=1800, clock=Clock())
    cache.put(_plan(parent=None), _resolution(None))
    cache.put(_plan(), _resolution("id-parent"))
    assert cache.get(_plan(parent=None)) is None
    assert len(cache) == 1


def test_the_cache_is_bounded() -> None:
    cache = ResolutionCache(inactivity_seconds=1800, capacity=3, clock=Clock())
    plans = [_plan(own=SourceKey("opencode", f"s{n}")) for n in range(5)]
    for plan in plans:
        cache.put(plan, _resolution("id-parent"))
    assert len(cache) == 3
    assert cache.get(plans[0]) is None and cache.get(plans[4]) is not None


def _count_resolves(gw: Any) -> tuple[list[SessionPlan], Any]:
    """Count the store's resolutions (the plans it was asked); returns the real one too."""
    resolves: list[SessionPlan] = []
    real = gw.store.resolve

    def counting(*args: Any, **kwargs: Any) -> Resolution:
        resolves.append(args[0])
        return real(*args, **kwargs)

    gw.store.resolve = counting
    return resolves, real


def test_a_known_child_costs_no_store_trip_and_its_touch_lands(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    resolves, _ = _count_resolves(gw)
    lineage = {"x-session-id": "ses_c", "x-parent-session-id": "ses_p"}
    for _ in range(5):
        opencode(gw, lineage)
    assert len(resolves) == 1
    first_seen = gw.row("ses_c").last_seen_at
    time.sleep(1.1)
    opencode(gw, lineage)
    gw.idle()
    assert len(resolves) == 1
    # The touch was queued before the row, so the row's batch carried it at the latest.
    assert gw.row("ses_c").last_seen_at > first_seen
    assert len(gw.store.calls()) == 6
    child = gw.row("ses_c")
    assert child.parent_session_id == gw.row("ses_p").id


def test_a_repeated_refused_claim_is_audited_every_time(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_c", "x-parent-session-id": "ses_p"})
    for _ in range(3):  # a rewrite of a parent set once: refused, and audited each time
        opencode(gw, {"x-session-id": "ses_c", "x-parent-session-id": "ses_other"})
    gw.idle()
    outcomes = [a.outcome for a in gw.store.parent_assignments()]
    assert outcomes == ["assigned", "refused_rewrite", "refused_rewrite", "refused_rewrite"]


def test_a_parent_set_elsewhere_reaches_a_cached_root_through_its_touch(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    resolves, real = _count_resolves(gw)
    opencode(gw, {"x-session-id": "ses_r"})  # a root: resolved by the store, then cached
    # Another gateway process sharing the database sees ses_r as a child of ses_p.
    real(store_plan(ALICE_OC, "ses_r", "ses_p", role="child"), datetime.now(UTC))
    time.sleep(1.1)  # past the ttl: served from the cache, the row touched by the writer
    opencode(gw, {"x-session-id": "ses_r"})
    gw.idle()  # the touch's batch read the parent back
    opencode(gw, {"x-session-id": "ses_r"})
    assert len(resolves) == 1
    parents = [x.request.annotations["gateway"]["parent_session_id"] for x in gw.tape().exchanges]
    assert parents == [None, None, gw.row("ses_p").id]
    assert gw.row("ses_r").last_seen_at > gw.row("ses_p").first_seen_at


def _stdlib_body(body: bytes) -> object:
    """What the request body parse was before orjson: `json.loads`, None when it fails."""
    if not body or body[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


BODIES = [
    b'{"model":"m","metadata":{"user_id":"user_x_account__session_0b0e5b3e-1f0e-4c5e"}}',
    b'{"model":"m","metadata":{"user_id":123456789012345678901234567890}}',  # past 64 bits
    b'{"model":NaN,"prompt_cache_key":"ses_1"}',  # orjson refuses: the stdlib parses
    b'{"model":"\\ud800","prompt_cache_key":"\\ud800"}',  # a lone surrogate
    b"[" * 5000 + b"]" * 5000,  # deeper than either parses
    b'{"model":"m","model":"n","metadata":{"user_id":"{\\"session_id\\":\\"s\\"}"}}',
    b'{"a":1}\x00',
    b"\xff{",
    b"",
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("harness", ["claude-code", "codex", "opencode"])
def test_the_body_parse_gives_the_identity_and_model_the_stdlib_gave(
    body: bytes, harness: str
) -> None:
    headers = CIMultiDictProxy(CIMultiDict({"x-claude-code-session-id": "s0"}))
    ours, theirs = parse_json_body(body), _stdlib_body(body)
    assert identify(harness, headers, ours) == identify(harness, headers, theirs)
    endpoint = endpoint_for("POST", "/v1/messages")
    assert requested_model(ours, endpoint) == requested_model(theirs, endpoint)

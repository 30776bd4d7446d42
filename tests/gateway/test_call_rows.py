"""Issue 15 item 3, calls that vanish: every forwarded request gets exactly one `call` row
on SQLite and PostgreSQL, whatever its model string, method or nesting; values a store
cannot hold are stored escaped and flagged; a failing store is retried, then the failure
is written on the exchange's tape record; concurrent first turns naming each other as
parent never make the client see a 500."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from roller.gateway.store import StoreError
from tests.gateway.conftest import GatewayFactory, RunningGateway
from tests.gateway.test_sessions_http import opencode
from tests.support.rawhttp import send


def _chat(gw: RunningGateway, body: bytes, method: str = "POST", **headers: str) -> int | None:
    auth = [("authorization", f"Bearer {gw.tokens['oc']}"), ("content-type", "application/json")]
    response = send(gw.url, method, "/v1/chat/completions", [*auth, *headers.items()], body)
    return response.status


@pytest.mark.parametrize(
    ("model", "stored", "flag"),
    [
        ("\ud800", "\\ud800", "escaped:model"),
        ("a\x00b", "a\\x00b", "escaped:model"),
        ("m" * 300, "m" * 200, "truncated:model"),
    ],
    ids=["lone-surrogate", "nul", "too-long"],
)
def test_a_model_string_the_store_cannot_hold_is_stored_escaped_and_flagged(
    start_gateway: GatewayFactory, model: str, stored: str, flag: str
) -> None:
    gw = start_gateway()
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    assert _chat(gw, body.encode()) == 200
    gw.idle()
    (row,) = gw.store.calls()
    assert row.model == stored and row.flags == [flag]
    assert row.session_id is not None and row.execution_status == "completed"


def test_an_unusual_method_and_deep_nesting_still_get_their_row(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    assert _chat(gw, b"{}", method="UNSUBSCRIBE") is not None
    deep = b'{"model":"m","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert _chat(gw, deep) != 500
    gw.idle()
    rows = gw.store.calls()
    assert [row.method for row in rows] == ["UNSUBSCRIBE", "POST"]
    assert len(gw.tape().exchanges) == 2
    assert all(row.session_id is not None for row in rows)


def test_a_failing_store_is_retried(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    real = gw.store.write_batch
    failures = [StoreError("session store: connection lost")] * 2

    def flaky(*args: Any, **kwargs: Any) -> None:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    gw.store.write_batch = flaky  # type: ignore[method-assign]
    opencode(gw, {"x-session-id": "ses_1"})
    gw.idle()
    assert len(gw.store.calls()) == 1 and failures == []
    assert gw.gateway.store_errors == 0


def test_a_store_that_stays_down_is_written_on_the_exchange(start_gateway: GatewayFactory) -> None:
    from roller.gateway.writer import ROW_ATTEMPTS  # the writer retries a batch

    gw = start_gateway()

    def down(*args: Any, **kwargs: Any) -> None:
        raise StoreError("session store: disk I/O error")

    gw.store.write_batch = down  # type: ignore[method-assign]
    opencode(gw, {"x-session-id": "ses_1"})
    (exchange,) = gw.tape().exchanges
    assert exchange.outcome == "ok"
    # The failure is part of the exchange's own record (an `ann` frame after its end).
    error = exchange.request.annotations["end_hook_error"]
    assert error["code"] == "StoreError" and "disk I/O error" in error["message"]
    assert f"after {ROW_ATTEMPTS} attempts" in error["message"]
    assert gw.gateway.store_errors == 1


def test_first_turns_naming_each_other_as_parent_never_500(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    for round_ in range(5):
        a, b = f"ses_a{round_}", f"ses_b{round_}"
        barrier = threading.Barrier(2)

        def turn(own: str, parent: str, barrier: threading.Barrier = barrier) -> int:
            barrier.wait()
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
            lineage = {"x-session-id": own, "x-parent-session-id": parent}
            return _chat(gw, body.encode(), **lineage) or 0

        with ThreadPoolExecutor(2) as pool:
            statuses = list(pool.map(turn, (a, b), (b, a)))
        assert statuses == [200, 200], round_
        parents = {r.source_id: r.parent_session_id for r in gw.rows()}
        # One of the two links was recorded, the other refused as a cycle.
        assert [parents[a], parents[b]].count(None) == 1

"""Issue 15 item 1, unauthenticated load: a request the gateway refuses is refused on its
head, before its body is read, and is recorded by its head and outcome only; a body
over the configured limit never reaches the tape whole nor the upstream."""

from __future__ import annotations

import json

from tests.gateway.conftest import GatewayFactory
from tests.support.rawhttp import send, tape_bytes

MIB = 1 << 20
CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


def test_a_wrong_token_is_refused_before_the_body_is_read(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    body = b'{"model":"m","pad":"' + b"x" * (20 * MIB) + b'"}'
    response = send(
        gw.url,
        "POST",
        "/v1/messages",
        [("x-api-key", "rlr_wrong-token"), ("content-type", "application/json")],
        body,
    )
    assert response.status == 401
    (exchange,) = gw.tape().exchanges
    assert exchange.outcome == "rejected" and exchange.end is not None
    # The head and the outcome, not the 20 MiB it announced.
    assert exchange.request_body == b"" and exchange.end.request_bytes == 0
    assert tape_bytes(gw.tape_dir) < 64 * 1024
    (row,) = gw.store.calls()
    assert (row.session_id, row.client_status, row.outcome) == (None, 401, "rejected")


def test_a_body_over_the_limit_is_refused_on_its_content_length(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway(max_request_body_mib=1)
    token = gw.tokens["oc"]
    auth = [("authorization", f"Bearer {token}"), ("content-type", "application/json")]
    response = send(gw.url, "POST", "/v1/chat/completions", auth, b"{" + b" " * (2 * MIB) + b"}")
    assert response.status == 413
    assert json.loads(response.body)["error"]["type"] == "roller_request_too_large"
    (exchange,) = gw.tape().exchanges
    assert exchange.end is not None and exchange.end.request_bytes == 0
    assert exchange.request_body == b""
    assert tape_bytes(gw.tape_dir) < 64 * 1024
    # Under the limit, the same credential is served.
    assert send(gw.url, "POST", "/v1/chat/completions", auth, CHAT).status == 200


def test_a_chunked_body_is_cut_off_at_the_limit(start_gateway: GatewayFactory) -> None:
    gw = start_gateway(max_request_body_mib=1)
    auth = [("authorization", f"Bearer {gw.tokens['oc']}"), ("content-type", "application/json")]
    parts = (b"x" * (64 * 1024) for _ in range(64))  # 4 MiB, no content-length
    response = send(gw.url, "POST", "/v1/chat/completions", auth, parts)
    assert response.status == 413 or response.error is not None
    first, *_ = gw.tape().exchanges
    assert first.outcome == "rejected" and first.end is not None
    # Read (and taped) only up to the limit and the piece that crossed it.
    assert MIB < (first.end.request_bytes or 0) <= MIB + 256 * 1024
    assert tape_bytes(gw.tape_dir) < 2 * MIB

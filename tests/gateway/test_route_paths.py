"""Issue 15 item 6, one canonical route match: however a client spells the gateway's own
`/roller/` routes (percent-encoded, another letter case), it reaches them or gets the
gateway's 404, and never the upstream."""

from __future__ import annotations

import json

import pytest

from tests.gateway.conftest import GatewayFactory
from tests.gateway.test_sessions_http import opencode
from tests.support.rawhttp import send


@pytest.mark.parametrize("prefix", ["/roller", "/%72oller", "/ROLLER", "/Roller", "//roller"])
def test_every_spelling_of_a_gateway_route_is_the_gateway_s(
    start_gateway: GatewayFactory, prefix: str
) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_root"})
    root = gw.row("ses_root").id
    auth = [("authorization", f"Bearer {gw.tokens['oc']}"), ("x-session-id", "ses_root")]
    before = len(gw.tape().exchanges)
    tree = send(gw.url, "GET", f"{prefix}/sessions/{root}/tree", auth)
    assert tree.status == 200 and json.loads(tree.body)["tree"]["id"] == root
    missing = send(gw.url, "POST", f"{prefix}/nope", auth, b"{}")
    assert missing.status == 404
    assert json.loads(missing.body)["error"]["type"] == "roller_not_found"
    # Neither reached the upstream nor the tape as model traffic.
    assert len(gw.tape().exchanges) == before

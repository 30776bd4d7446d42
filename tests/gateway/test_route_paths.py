"""Issue 15 item 6, one canonical route match: however a client spells the gateway's own
`/roller/` routes (percent-encoded, another letter case), it reaches them or gets the
gateway's 404, and never the upstream."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roller.gateway.paths import NAMESPACE, own_route
from roller.wire.endpoints import path_segments
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


def _own_route_in_full(target: str) -> tuple[str, ...] | None:
    """`own_route` without its quick refusal: the path's segments, decoded, compared."""
    segments = path_segments(target.split("?", 1)[0])
    if not segments or segments[0].lower() != NAMESPACE:
        return None
    return segments[1:]


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(
        st.sampled_from(["/", "//", "roller", "ROLLER", "rOlLeR", "%72oller", "%2F", "%", "v1",
                         "notes", "?", "?x=/roller", "messages", "r", "oller", "%52", "é"]),
        max_size=6,
    )
)  # fmt: skip
def test_the_quick_refusal_refuses_only_what_is_not_the_gateways(parts: list[str]) -> None:
    target = "".join(parts)
    assert own_route(target) == _own_route_in_full(target), target

"""Authentication and key swap: the roller token never reaches an upstream or the disk;
an unknown token gets a 401 that is recorded without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web

from tests.gateway.conftest import GatewayFactory
from tests.gateway.test_sessions_http import gemini, post_json
from tests.support.servers import BackgroundLoop

REAL = {"anthropic": "sk-ant-REAL", "openai": "sk-oai-REAL", "gemini": "AIza-REAL"}


def recording_upstream(bg_loop: BackgroundLoop, seen: list[tuple[str, dict[str, str]]]) -> str:
    async def handler(request: web.Request) -> web.Response:
        seen.append((request.raw_path, {k.lower(): v for k, v in request.headers.items()}))
        if request.path.endswith("/messages"):
            return web.json_response(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            )
        return web.json_response(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return bg_loop.serve(app)


def test_the_real_key_is_swapped_in_and_the_token_never_leaves(
    bg_loop: BackgroundLoop, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    upstream = recording_upstream(bg_loop, seen)
    gw = start_gateway(
        upstreams={
            family: {"url": upstream, "key_env": f"{family.upper()}_KEY"} for family in REAL
        },
        environ={f"{family.upper()}_KEY": key for family, key in REAL.items()},
    )
    anthropic.Anthropic(base_url=gw.url, api_key=gw.tokens["cc"], max_retries=0).messages.create(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    openai.OpenAI(
        base_url=gw.url + "/v1", api_key=gw.tokens["oc"], max_retries=0
    ).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert gemini(gw) == 200
    assert gemini(gw, query=True) == 200
    (_, a), (_, o), (_, g), (q_path, q) = seen
    assert a["x-api-key"] == REAL["anthropic"] and "authorization" not in a
    assert o["authorization"] == f"Bearer {REAL['openai']}" and "x-api-key" not in o
    assert g["x-goog-api-key"] == REAL["gemini"] and q["x-goog-api-key"] == REAL["gemini"]
    assert "key=" not in q_path
    gw.idle()
    for token in gw.tokens.values():
        for path, headers in seen:
            assert token not in path and token not in str(headers)
    bg_loop.run(gw.gateway.stop())
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert all(t.encode() not in data for t in gw.tokens.values()), path
            assert all(k.encode() not in data for k in REAL.values()), path


def test_unknown_and_conflicting_tokens_get_401_recorded_without_them(
    bg_loop: BackgroundLoop, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    gw = start_gateway()
    bogus = "rlr_not-a-real-token-0123456789"
    client = anthropic.Anthropic(base_url=gw.url, api_key=bogus, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        client.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    two = {"authorization": f"Bearer {gw.tokens['oc']}", "x-api-key": gw.tokens["cc"]}
    assert post_json(gw.url + "/v1/chat/completions", body, two) == 401
    assert post_json(gw.url + "/v1/chat/completions", body, {}) == 401
    unknown, conflicting, missing = gw.tape().exchanges
    assert unknown.outcome == "rejected" and unknown.end.client_status == 401
    assert unknown.request.annotations["gateway"]["reason"] == "unknown roller token"
    assert (
        conflicting.request.annotations["gateway"]["reason"]
        == "different credentials on one request"
    )
    assert missing.request.annotations["gateway"]["reason"] == "no token"
    calls = gw.store.calls()
    assert [(c.session_id, c.account, c.client_status) for c in calls] == [(None, None, 401)] * 3
    assert gw.rows() == []
    bg_loop.run(gw.gateway.stop())
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert bogus.encode() not in data and gw.tokens["cc"].encode() not in data

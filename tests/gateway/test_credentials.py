"""Issue 15 item 5, credentials leaking: the gateway forwards no credential-bearing header
it does not own (the roller token sent as `api-key`, `x-auth-token`,
`proxy-authorization`, cookies), nor a secret query parameter; configured header and
query names are redacted from the tape too. Logs: tests/proxy/test_server_logs.py."""

from __future__ import annotations

from pathlib import Path

from tests.gateway.conftest import GatewayFactory
from tests.gateway.test_auth_http import REAL, recording_upstream
from tests.support.rawhttp import send
from tests.support.servers import BackgroundLoop

CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'


def test_no_credential_the_gateway_does_not_own_reaches_the_upstream(
    bg_loop: BackgroundLoop, start_gateway: GatewayFactory, tmp_path: Path
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    upstream = recording_upstream(bg_loop, seen)
    gw = start_gateway(
        upstreams={"openai": {"url": upstream, "key_env": "OPENAI_KEY"}},
        environ={"OPENAI_KEY": REAL["openai"]},
        redact_headers=["x-key"],
        redact_query=["k"],
    )
    token = gw.tokens["oc"]
    headers = [
        ("authorization", f"Bearer {token}"),
        ("api-key", token),
        ("x-auth-token", "sk-other-secret-1"),
        ("proxy-authorization", "Basic c2VjcmV0LTI="),
        ("cookie", "session=secret-3"),
        ("x-key", "secret-4"),
        ("content-type", "application/json"),
    ]
    response = send(
        gw.url, "POST", "/v1/chat/completions?k=secret-5&access_token=secret-6", headers, CHAT
    )
    assert response.status == 200
    ((path, forwarded),) = seen
    assert forwarded["authorization"] == f"Bearer {REAL['openai']}"
    for name in ("api-key", "x-auth-token", "proxy-authorization", "cookie", "x-key"):
        assert name not in forwarded, name
    assert "secret" not in path and path == "/v1/chat/completions"
    bg_loop.run(gw.gateway.stop())
    secrets = [token, "sk-other-secret-1", "c2VjcmV0LTI=", "secret-3", "secret-4", "secret-5"]
    for file in tmp_path.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert all(s.encode() not in data for s in [*secrets, "secret-6"]), file

"""What the gateway's request path costs the store: authentication none, a known session
none after its first resolution, call rows batched by the background writer.

Issue 16, item 1: a store round trip per request made the gateway 13x the proxy's CPU.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from roller.gateway.config import parse_config
from roller.gateway.policy import GatewayPolicy
from roller.gateway.tokens import new_token, token_sha256
from roller.proxy import RequestHead


class NoStore:
    """A store that fails the test the moment anything of it is used."""

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

"""The redaction rules, name by name."""

from __future__ import annotations

import pytest

from roller.proxy.redaction import (
    is_secret_header,
    is_secret_query_param,
    redact_headers,
    redact_query,
    roller_evidence,
)


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "proxy-authorization",
        "X-Api-Key",
        "api-key",
        "x-goog-api-key",
        "Cookie",
        "set-cookie",
        "x-amz-security-token",
        "X-Client-Secret",
        "x_api_key",
        "ocp-apim-subscription-key",
        "x-forwarded-authorization",
        "x-auth",
        "x-apikey",
    ],
)
def test_secret_headers(name: str) -> None:
    assert is_secret_header(name)


@pytest.mark.parametrize(
    "name",
    [
        "anthropic-ratelimit-tokens-remaining",
        "x-ratelimit-remaining-tokens",
        "x-goog-api-client",
        "x-claude-code-session-id",
        "thread-id",
        "session-id",
        "x-codex-turn-metadata",
        "idempotency-key",
        "anthropic-version",
        "openai-organization",
        "content-type",
        "x-stainless-retry-count",
        "user-agent",
    ],
)
def test_ordinary_headers_are_kept(name: str) -> None:
    assert not is_secret_header(name)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("key", True),
        ("KEY", True),
        ("api_key", True),
        ("apikey", True),
        ("api-key", True),
        ("access_token", True),
        ("token", True),
        ("sig", True),
        ("client_secret", True),
        ("alt", False),
        ("beta", False),
        ("api-version", False),
        ("model", False),
    ],
)
def test_query_params(name: str, secret: bool) -> None:
    assert is_secret_query_param(name) is secret


def test_redacted_lists_keep_order_and_record_names_only() -> None:
    headers = [
        ("Host", "h"),
        ("Authorization", "Bearer sk-1"),
        ("x-roller-sample", "s"),
        ("Cookie", "a=1"),
        ("cookie", "b=2"),
        ("thread-id", "t"),
    ]
    result = redact_headers(headers)
    assert result.kept == (("Host", "h"), ("thread-id", "t"))
    assert result.removed == ("authorization", "cookie")
    query = redact_query([("alt", "sse"), ("key", "k1"), ("Key", "k2")])
    assert query.kept == (("alt", "sse"),)
    assert query.removed == ("key", "Key")


def test_roller_evidence_collects_only_roller_headers() -> None:
    headers = [("X-Roller-Sample", "a"), ("x-roller-sample", "b"), ("x-other", "c")]
    assert roller_evidence(headers) == {"x-roller-sample": "a, b"}

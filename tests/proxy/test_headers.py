"""Headers across the proxy: hop-by-hop, x-roller-*, accept-encoding narrowing."""

from __future__ import annotations

import pytest

from roller.proxy.headers import (
    client_response_headers,
    narrow_accept_encoding,
    upstream_request_headers,
)


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (None, "identity"),
        ("zstd,gzip", "gzip"),
        ("gzip, deflate, br", "gzip, deflate"),
        ("br", "identity"),
        ("deflate;q=0.5, gzip;q=1.0", "deflate, gzip"),
        ("gzip;q=0, deflate", "deflate"),
        ("*", "gzip, deflate"),
        ("x-gzip", "gzip"),
        ("identity", "identity"),
    ],
)
def test_accept_encoding_is_narrowed_to_what_the_stdlib_decodes(
    given: str | None, sent: str
) -> None:
    assert narrow_accept_encoding(given) == sent


def test_request_headers_forwarded_upstream() -> None:
    headers = [
        ("Host", "127.0.0.1:1"),
        ("Connection", "keep-alive, X-Hop"),
        ("X-Hop", "1"),
        ("Keep-Alive", "timeout=5"),
        ("Content-Length", "10"),
        ("Transfer-Encoding", "chunked"),
        ("Expect", "100-continue"),
        ("X-Roller-Sample", "s"),
        ("thread-id", "t1"),
        ("x-stainless-lang", "js"),
        ("x-stainless-lang", "again"),
        ("Authorization", "Bearer caller"),
        ("accept-encoding", "zstd,gzip"),
    ]
    out = upstream_request_headers(headers)
    assert list(out.items()) == [
        ("thread-id", "t1"),
        ("x-stainless-lang", "js"),
        ("x-stainless-lang", "again"),
        ("Authorization", "Bearer caller"),
        ("Accept-Encoding", "gzip"),
    ]
    swapped = upstream_request_headers(
        headers, set_headers={"x-api-key": "real"}.items(), remove_headers=("authorization",)
    )
    assert swapped["x-api-key"] == "real" and "Authorization" not in swapped


def test_response_headers_relayed_to_the_client() -> None:
    headers = [
        ("Content-Type", "text/event-stream"),
        ("Transfer-Encoding", "chunked"),
        ("Connection", "close"),
        ("Content-Encoding", "gzip"),
        ("Set-Cookie", "a=1"),
        ("request-id", "req_1"),
    ]
    assert list(client_response_headers(headers).items()) == [
        ("Content-Type", "text/event-stream"),
        ("Content-Encoding", "gzip"),
        ("Set-Cookie", "a=1"),
        ("request-id", "req_1"),
    ]

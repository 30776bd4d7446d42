"""Which upstream a path goes to, and the URL it is sent to."""

from __future__ import annotations

import pytest

from roller.errors import UsageError
from roller.proxy.routing import Upstreams, upstream_url
from roller.wire.endpoints import family_for


@pytest.mark.parametrize(
    ("path", "family"),
    [
        ("/v1/messages", "anthropic"),
        ("/v1/messages?beta=true", "anthropic"),
        ("/anthropic/v1/messages", "anthropic"),
        ("/v1/messages/count_tokens", "anthropic"),
        ("/v1/chat/completions", "openai"),
        ("/api/v1/chat/completions", "openai"),
        ("/v1/responses", "openai"),
        ("/backend-api/codex/responses", "openai"),
        ("/v1/responses/resp_1/cancel", "openai"),
        ("/v1/embeddings", "openai"),
        ("/v1beta/models/gemini-3.8-flash:streamGenerateContent", "gemini"),
        ("/models/gemini-2:generateContent", "gemini"),
        ("/v1/models", None),
        ("/api/v1/models", None),
        ("/", None),
        # Assistants is OpenAI's (it used to fall to the default; ends in /messages).
        ("/v1/threads/t/messages", "openai"),
    ],
)
def test_family_for(path: str, family: str | None) -> None:
    assert family_for(path) == family


def test_overrides_win_over_the_default() -> None:
    ups = Upstreams(default="http://d:1/", anthropic="https://a:2/base/")
    assert ups.default == "http://d:1"
    assert ups.for_path("/v1/messages") == "https://a:2/base"
    assert ups.for_path("/v1/chat/completions") == "http://d:1"
    assert ups.for_path("/v1/models") == "http://d:1"
    only = Upstreams(gemini="http://g:3")
    assert only.for_path("/v1/messages") is None
    assert not Upstreams().configured() and only.configured()


@pytest.mark.parametrize(
    "bad", ["ftp://h", "h:1", "http://u:p@h:1", "http://h:1/?key=x", "http://h:1/#f", "http://"]
)
def test_bad_upstreams_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        Upstreams(default=bad)


def test_upstream_url_keeps_the_target_exactly() -> None:
    url = upstream_url("http://h:1/base", "/v1/x%2Fy:gen?alt=sse&q=a%20b")
    assert str(url) == "http://h:1/base/v1/x%2Fy:gen?alt=sse&q=a%20b"
    assert url.raw_path_qs == "/base/v1/x%2Fy:gen?alt=sse&q=a%20b"


def test_upstream_urls_are_cached() -> None:
    # A harness repeats its targets: the second exchange's URL comes from the cache.
    url = upstream_url("http://h:1/base", "/v1/cached")
    hits = upstream_url.cache_info().hits
    assert upstream_url("http://h:1/base", "/v1/cached") is url
    assert upstream_url.cache_info().hits == hits + 1

"""protocol_for / codec_for: the endpoint decides the protocol, never the body."""

from __future__ import annotations

import pytest

from roller.wire import PROTOCOL_NAMES, codec_for, protocol_for


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        # Endpoints the harness notes show on the wire.
        ("POST", "/v1/messages?beta=true", "anthropic-messages"),  # Claude Code
        ("POST", "/v1/messages", "anthropic-messages"),  # Pi, Hermes, OpenClaw
        ("POST", "/v1/chat/completions", "openai-chat-completions"),  # OpenCode, Qwen
        ("POST", "/v1/responses", "openai-responses"),  # Codex, Pi
        (
            "POST",
            "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
            "gemini",
        ),  # Gemini CLI, streamed
        ("POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", "gemini"),  # router
        # A base-path prefix before the endpoint (gateways that route by prefix).
        ("POST", "/openai/v1/chat/completions", "openai-chat-completions"),
        ("POST", "/anthropic/v1/messages?beta=true", "anthropic-messages"),
        (
            "POST",
            "/openai/deployments/gpt/chat/completions?api-version=1",
            "openai-chat-completions",
        ),
        ("POST", "/proxy/v1/responses/", "openai-responses"),
        ("POST", "/v1/projects/p/locations/l/publishers/google/models/m:generateContent", "gemini"),
        ("POST", "/v1beta/tunedModels/mine:generateContent", "gemini"),
        ("POST", "/v1beta/models/gemini-2.5-pro%3AstreamGenerateContent?alt=sse", "gemini"),
        ("post", "/v1/messages", "anthropic-messages"),
        # Not model calls of these protocols.
        ("GET", "/v1/messages", None),
        ("HEAD", "/", None),
        ("GET", "/v1/models", None),
        ("POST", "/v1/messages/count_tokens?beta=true", None),
        ("POST", "/v1/threads/thread_1/messages", None),  # Assistants, not Anthropic
        ("POST", "/v1/responses/compact", None),
        ("POST", "/v1/responses/resp_1/cancel", None),
        ("POST", "/v1/completions", None),
        ("POST", "/v1beta/models/gemini-2.5-pro:countTokens", None),
        ("POST", "/api/show", None),
        ("POST", "", None),
    ],
)
def test_protocol_for(method: str, path: str, expected: str | None) -> None:
    assert protocol_for(method, path) == expected


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_codec_for_returns_the_named_codec(name: str) -> None:
    assert codec_for(name).name == name  # type: ignore[arg-type]


def test_codec_for_unknown_name() -> None:
    with pytest.raises(KeyError):
        codec_for("soap")  # type: ignore[arg-type]

"""Which endpoint a request path names, and the side endpoints' bodies (model lists).

Rules kept here:
- Routing looks at the end of the path only, so any base-path prefix works
  (`http://127.0.0.1:P/anthropic/v1/messages`, as DeepSeek Harness is configured). The
  query string never changes the endpoint, except Gemini's `alt=sse` choosing SSE.
- `GET …/models` answers in one shape both OpenAI and Anthropic clients parse: each entry
  has OpenAI's `id`/`object`/`created`/`owned_by` and Anthropic's `type`/`display_name`/
  `created_at`, and the list has both `object: "list"` and `has_more`/`first_id`/`last_id`.
  Under `/v1beta/` it answers in Gemini's `{"models": [{"name": "models/…"}]}` shape.
- An unknown path gets an error body in the protocol its path or headers suggest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from roller.wire.types import JSONObject, ProtocolName

Action = Literal["generate", "count_tokens", "models", "model"]

_GEMINI = re.compile(r"/models/(?P<model>[^/]+):(?P<method>[A-Za-z]+)$")
_MODEL = re.compile(r"/models/(?P<model>[^/:]+)$")
_SUFFIXES: tuple[tuple[str, Action, ProtocolName], ...] = (
    ("/messages/count_tokens", "count_tokens", "anthropic-messages"),
    ("/messages", "generate", "anthropic-messages"),
    ("/chat/completions", "generate", "openai-chat-completions"),
    ("/responses", "generate", "openai-responses"),
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    action: Action
    method: str
    protocol: ProtocolName | None = None
    model: str | None = None
    stream: bool = False
    sse: bool = False
    gemini_shape: bool = False


def route(path: str, query: Mapping[str, str]) -> Endpoint | None:
    path = path.rstrip("/") or "/"
    for suffix, action, protocol in _SUFFIXES:
        if path.endswith(suffix):
            return Endpoint(action, "POST", protocol)
    gemini = _GEMINI.search(path)
    if gemini is not None:
        model, method = gemini["model"], gemini["method"]
        if method == "generateContent":
            return Endpoint("generate", "POST", "gemini", model=model)
        if method == "streamGenerateContent":
            sse = query.get("alt") == "sse"
            return Endpoint("generate", "POST", "gemini", model=model, stream=True, sse=sse)
        if method == "countTokens":
            return Endpoint("count_tokens", "POST", "gemini", model=model)
        return None
    is_gemini = "/v1beta/" in f"{path}/"
    if path.endswith("/models"):
        return Endpoint("models", "GET", gemini_shape=is_gemini)
    single = _MODEL.search(path)
    if single is not None:
        return Endpoint("model", "GET", model=single["model"], gemini_shape=is_gemini)
    return None


def guess_protocol(path: str, headers: Mapping[str, str]) -> ProtocolName:
    """The protocol whose error shape suits a request the mock cannot route."""
    if "/v1beta" in path or "x-goog-api-key" in headers:
        return "gemini"
    if "anthropic-version" in headers or "/messages" in path:
        return "anthropic-messages"
    if "/responses" in path:
        return "openai-responses"
    return "openai-chat-completions"


def model_entry(model: str, *, gemini: bool) -> JSONObject:
    if gemini:
        return {
            "name": f"models/{model}",
            "displayName": model,
            "supportedGenerationMethods": [
                "generateContent",
                "streamGenerateContent",
                "countTokens",
            ],
        }
    return {
        "id": model,
        "object": "model",
        "created": 0,
        "owned_by": "roller-mock",
        "type": "model",
        "display_name": model,
        "created_at": "1970-01-01T00:00:00Z",
    }


def models_list(models: tuple[str, ...], *, gemini: bool) -> JSONObject:
    entries = [model_entry(m, gemini=gemini) for m in models]
    if gemini:
        return {"models": entries}
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }

"""What the mock answers at an endpoint, and the side endpoints' bodies (model lists).

Rules kept here:
- Which endpoint a request names is `roller.wire.endpoints.endpoint_for`, the table the
  proxy, finalize and the gateway use too (any base-path prefix works, the query never
  changes the endpoint except Gemini's `alt=sse` choosing SSE). The mock serves the rows
  whose kind is in `ACTIONS`; another row, or no row, is a 404, and a served row asked
  with the wrong method a 405.
- `GET …/models` answers in one shape both OpenAI and Anthropic clients parse: each entry
  has OpenAI's `id`/`object`/`created`/`owned_by` and Anthropic's `type`/`display_name`/
  `created_at`, and the list has both `object: "list"` and `has_more`/`first_id`/`last_id`.
  A Gemini row (`/v1beta/models`) answers in Gemini's `{"models": [{"name": "models/…"}]}`.
- An error is in the shape of the endpoint's protocol; where the endpoint names none, the
  headers suggest one (`ERROR_SHAPE_HEADERS`), else OpenAI's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from roller.wire.endpoints import Endpoint, EndpointKind
from roller.wire.types import JSONObject, ProtocolName

Action = Literal["generate", "count_tokens", "models", "model"]

ACTIONS: Final[Mapping[EndpointKind, Action]] = {
    "generation": "generate",
    "token_count": "count_tokens",
    "model_list": "models",
    "model_info": "model",
}
# The first of these headers present decides.
ERROR_SHAPE_HEADERS: Final[tuple[tuple[str, ProtocolName], ...]] = (
    ("x-goog-api-key", "gemini"),
    ("anthropic-version", "anthropic-messages"),
)
FALLBACK_SHAPE: Final[ProtocolName] = "openai-chat-completions"


def action_of(endpoint: Endpoint) -> Action | None:
    """What the mock does at the endpoint's row (None: it does not serve that row)."""
    return None if endpoint.route is None else ACTIONS.get(endpoint.route.kind)


def error_protocol(endpoint: Endpoint, headers: Mapping[str, str]) -> ProtocolName:
    """The protocol whose error shape answers a request at `endpoint`."""
    if endpoint.protocol is not None:
        return endpoint.protocol
    found = (protocol for name, protocol in ERROR_SHAPE_HEADERS if name in headers)
    return next(found, FALLBACK_SHAPE)


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

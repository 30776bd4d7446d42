"""What every protocol dialect of the mock provides, and the helpers they share.

A dialect reads its protocol's request into a `RequestView` and writes a `Reply` in its
protocol's response shapes. Rules kept here:
- Reading is lenient about what the mock does not need (unknown blocks, extra fields are
  skipped) and strict only where the real API would be: a body that is not the protocol's
  shape raises `BadRequest`, which the server turns into a protocol-appropriate 400.
- Writing is pure: ids come from the server's `IdMint`, the streamed form is derived from
  the same output object as the non-streamed one, so both agree field for field.
- Dialects never import each other (the same rule as `roller.wire`'s codecs).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from roller.mock.ids import IdKind, IdMint
from roller.mock.reply import Reply
from roller.mock.request_view import RequestView
from roller.wire.types import JSONObject, ProtocolName


class BadRequest(ValueError):
    """The body parsed as JSON but is not a request of this protocol."""


class Dialect(Protocol):
    name: ProtocolName
    # The reply header carrying a request id and the id kind minted for it; None: none.
    # (Claude Code stores `request-id` as the transcript's requestId; OpenAI SDKs read
    # `x-request-id`; Gemini sends neither.)
    request_id_header: tuple[str, IdKind] | None
    # The field of a count-tokens reply (`{"input_tokens": N}`, Gemini `{"totalTokens": N}`).
    token_count_field: str

    def read(self, body: JSONObject, *, path_model: str | None, path_stream: bool) -> RequestView:
        """The neutral view of `body`; `path_model`/`path_stream` come from the URL (Gemini)."""
        ...

    def render(self, reply: Reply, view: RequestView, ids: IdMint) -> JSONObject:
        """The non-streamed response body."""
        ...

    def render_stream(self, reply: Reply, view: RequestView, ids: IdMint) -> list[bytes]:
        """The streamed response as SSE events, one bytes object per event."""
        ...

    def error_body(self, status: int, message: str) -> JSONObject:
        """This protocol's error object for an HTTP error `status`."""
        ...


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments as echoed in history: JSON text parsed when it parses."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def required_str(body: JSONObject, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key}: a non-empty string is required")
    return value

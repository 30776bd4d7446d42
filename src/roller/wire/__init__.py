"""roller.wire — sans-I/O codecs for the model protocols roller records.

`protocol_for(method, path)` names the protocol of an HTTP exchange from its endpoint
alone (never from the body); `codec_for(name)` returns that protocol's `Codec`.

Endpoint rules (`path` may carry a query string, which is ignored, so Claude Code's
`/v1/messages?beta=true` matches; percent-escapes are decoded first). Only POST is a model
call. Any prefix before the endpoint is accepted, so a gateway that routes by a base
path (`/openai/v1/chat/completions`, `/anthropic/v1/messages`, Azure's
`/openai/deployments/D/chat/completions`) still decodes:

| protocol | the path ends with |
|---|---|
| `anthropic-messages` | `/v1/messages` |
| `openai-chat-completions` | `/chat/completions` |
| `openai-responses` | `/responses` |
| `gemini` | `/models/M:generateContent`, `/models/M:streamGenerateContent` (or `tunedModels/`) |

Endpoints that are not model calls of these shapes give None: `/v1/messages/count_tokens`,
`/v1/responses/compact`, `/v1/responses/{id}`, `:countTokens`, `/v1/models`, and
Assistants' `/v1/threads/{id}/messages` (which ends in `/messages` but not `/v1/messages`).
"""

from __future__ import annotations

from urllib.parse import unquote

from roller.wire import anthropic, gemini, openai_chat, openai_responses
from roller.wire.sse import SSEDecoder, encode_event
from roller.wire.types import (
    PROTOCOL_NAMES,
    Codec,
    JSONObject,
    ProtocolName,
    Reassembly,
    SSEEvent,
    StreamAssembler,
    ToolCall,
    ToolRefs,
    ToolResult,
    Usage,
)

__all__ = [
    "PROTOCOL_NAMES",
    "Codec",
    "JSONObject",
    "ProtocolName",
    "Reassembly",
    "SSEDecoder",
    "SSEEvent",
    "StreamAssembler",
    "ToolCall",
    "ToolRefs",
    "ToolResult",
    "Usage",
    "codec_for",
    "encode_event",
    "protocol_for",
]

_CODECS: dict[ProtocolName, Codec] = {
    "anthropic-messages": anthropic.CODEC,
    "openai-chat-completions": openai_chat.CODEC,
    "openai-responses": openai_responses.CODEC,
    "gemini": gemini.CODEC,
}


def protocol_for(method: str, path: str) -> ProtocolName | None:
    """The protocol of a `method path` exchange, per the table in the module docstring."""
    if method.upper() != "POST":
        return None
    bare = unquote(path.split("?", 1)[0].split("#", 1)[0]).rstrip("/")
    if bare.endswith("/v1/messages"):
        return "anthropic-messages"
    if bare.endswith("/chat/completions"):
        return "openai-chat-completions"
    if bare.endswith("/responses"):
        return "openai-responses"
    found = gemini.model_from_path(bare)
    if found is not None and found[1] in ("generateContent", "streamGenerateContent"):
        return "gemini"
    return None


def codec_for(name: ProtocolName) -> Codec:
    """The codec of a protocol. Raises KeyError for a name outside `PROTOCOL_NAMES`."""
    return _CODECS[name]

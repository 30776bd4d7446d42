"""roller.wire — sans-I/O codecs for the model protocols roller records.

`endpoint_for(method, path, query)` says what an HTTP request is from its endpoint alone
(never from the body): its provider family, protocol, kind (a model call or a side
request), whether the endpoint streams, the model the path names. The table and its
matching rules are `roller.wire.endpoints`. `codec_for(name)` returns a protocol's
`Codec`: everything protocol-specific roller knows (reassembly, tool references, JSON
mode, where the conversation is and what "the same message" means, the conversation as
OpenAI chat messages).

A protocol is one package (`anthropic`, `openai_chat`, `openai_responses`, `gemini`)
plus its rows in the endpoint table: `stream` (reassembly of a recorded response, streamed
or whole, into the protocol's non-streaming shape), `codec` (its `CODEC`: response
accessors, tool references, JSON mode, the conversation of `history` and the `chat`
form), `history` (where a request's conversation is and what "the same message" means),
`chat` (its items, system prompt and tools as OpenAI chat messages and tools, and back).
A protocol package imports only the shared modules here (`types`, `jsonvalues`,
`bodies`, `history`, `chat`, `endpoints`, `sse`), never another protocol's.
"""

from __future__ import annotations

from roller.wire import anthropic, gemini, openai_chat, openai_responses
from roller.wire.endpoints import FAMILIES, Endpoint, EndpointKind, Family, endpoint_for
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
    "FAMILIES",
    "PROTOCOL_NAMES",
    "Codec",
    "Endpoint",
    "EndpointKind",
    "Family",
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
    "codec_named",
    "encode_event",
    "endpoint_for",
]

_CODECS: dict[ProtocolName, Codec] = {
    "anthropic-messages": anthropic.CODEC,
    "openai-chat-completions": openai_chat.CODEC,
    "openai-responses": openai_responses.CODEC,
    "gemini": gemini.CODEC,
}


def codec_for(name: ProtocolName) -> Codec:
    """The codec of a protocol. Raises KeyError for a name outside `PROTOCOL_NAMES`."""
    return _CODECS[name]


def codec_named(name: str | None) -> Codec | None:
    """The codec of a protocol name read back from disk; None for no or an unknown name."""
    return next((codec for known, codec in _CODECS.items() if known == name), None)

"""The mock's protocol dialects, one module per wire protocol, listed once in `DIALECTS`."""

from __future__ import annotations

from roller.mock.dialects import anthropic, gemini, openai_chat, openai_responses
from roller.mock.dialects.base import BadRequest, Dialect
from roller.wire.types import ProtocolName

DIALECTS: dict[ProtocolName, Dialect] = {
    "anthropic-messages": anthropic.DIALECT,
    "openai-chat-completions": openai_chat.DIALECT,
    "openai-responses": openai_responses.DIALECT,
    "gemini": gemini.DIALECT,
}

__all__ = ["DIALECTS", "BadRequest", "Dialect"]

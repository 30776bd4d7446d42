"""Anthropic Messages (`POST …/v1/messages`, also `?beta=true`).

One protocol, one package: `stream`, `codec`, `history`, `chat` (see `roller.wire`).
"""

from __future__ import annotations

from roller.wire.anthropic.codec import CODEC, AnthropicCodec
from roller.wire.anthropic.stream import AnthropicAssembler

__all__ = ["CODEC", "AnthropicAssembler", "AnthropicCodec"]

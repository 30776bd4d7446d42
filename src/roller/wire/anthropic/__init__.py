"""Anthropic Messages (`POST …/v1/messages`, also `?beta=true`).

One protocol, one package: `stream`, `codec`, `history`, `chat` (see `roller.wire`), and
`ending` (a stream's terminal fact without its reassembly, `roller.wire.ending`).
"""

from __future__ import annotations

from roller.wire.anthropic.codec import CODEC, AnthropicCodec
from roller.wire.anthropic.ending import stream_terminal, whole_terminal
from roller.wire.anthropic.stream import AnthropicAssembler

__all__ = ["CODEC", "AnthropicAssembler", "AnthropicCodec", "stream_terminal", "whole_terminal"]

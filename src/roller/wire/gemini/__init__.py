"""Gemini (`POST …/models/M:generateContent`, `…:streamGenerateContent`).

One protocol, one package: `stream`, `codec`, `history`, `chat` (see `roller.wire`).
"""

from __future__ import annotations

from roller.wire.gemini.codec import CODEC, GeminiCodec
from roller.wire.gemini.stream import GeminiAssembler

__all__ = ["CODEC", "GeminiAssembler", "GeminiCodec"]

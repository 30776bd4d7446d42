"""Gemini (`POST …/models/M:generateContent`, `…:streamGenerateContent`): one package.

- `stream`: reassembly of a recorded response (streamed or whole) into the protocol's
  non-streaming shape (`GeminiAssembler`);
- `codec`: the `Codec` (`CODEC`): response accessors, tool references, JSON mode, and
  the conversation of `history`;
- `history`: where a request's conversation is and what "the same message" means.

It imports only the shared `roller.wire` modules, never another protocol's package.
"""

from __future__ import annotations

from roller.wire.gemini.codec import CODEC, GeminiCodec
from roller.wire.gemini.stream import GeminiAssembler

__all__ = ["CODEC", "GeminiAssembler", "GeminiCodec"]

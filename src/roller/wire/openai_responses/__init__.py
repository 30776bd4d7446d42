"""OpenAI Responses (`POST …/responses`).

One protocol, one package: `stream`, `codec`, `history`, `chat` (see `roller.wire`).
"""

from __future__ import annotations

from roller.wire.openai_responses.codec import CODEC, ResponsesCodec
from roller.wire.openai_responses.stream import ResponsesAssembler

__all__ = ["CODEC", "ResponsesAssembler", "ResponsesCodec"]

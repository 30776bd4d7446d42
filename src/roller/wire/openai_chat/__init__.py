"""OpenAI Chat Completions (`POST …/chat/completions`).

One protocol, one package: `stream`, `codec`, `history`, `chat` (see `roller.wire`).
"""

from __future__ import annotations

from roller.wire.openai_chat.codec import CODEC, ChatCodec
from roller.wire.openai_chat.stream import ChatAssembler, merge_delta

__all__ = ["CODEC", "ChatAssembler", "ChatCodec", "merge_delta"]

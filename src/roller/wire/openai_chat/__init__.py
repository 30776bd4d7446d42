"""OpenAI Chat Completions (`POST …/chat/completions`): one protocol, one package.

- `stream`: reassembly of a recorded response (streamed or whole) into the protocol's
  non-streaming shape (`ChatAssembler`);
- `codec`: the `Codec` (`CODEC`): response accessors, tool references, JSON mode, and
  the conversation of `history`;
- `history`: where a request's conversation is and what "the same message" means.

It imports only the shared `roller.wire` modules, never another protocol's package.
"""

from __future__ import annotations

from roller.wire.openai_chat.codec import CODEC, ChatCodec
from roller.wire.openai_chat.stream import ChatAssembler, merge_delta

__all__ = ["CODEC", "ChatAssembler", "ChatCodec", "merge_delta"]

"""OpenAI Responses (`POST …/responses`): one protocol, one package.

- `stream`: reassembly of a recorded response (streamed or whole) into the protocol's
  non-streaming shape (`ResponsesAssembler`);
- `codec`: the `Codec` (`CODEC`): response accessors, tool references, JSON mode, and
  the conversation of `history`;
- `history`: where a request's conversation is and what "the same message" means.

It imports only the shared `roller.wire` modules, never another protocol's package.
"""

from __future__ import annotations

from roller.wire.openai_responses.codec import CODEC, ResponsesCodec
from roller.wire.openai_responses.stream import ResponsesAssembler

__all__ = ["CODEC", "ResponsesAssembler", "ResponsesCodec"]

"""Anthropic Messages (`POST …/v1/messages`, also `?beta=true`): one protocol, one package.

- `stream`: reassembly of a recorded response (streamed or whole) into the protocol's
  non-streaming shape (`AnthropicAssembler`);
- `codec`: the `Codec` (`CODEC`): response accessors, tool references, JSON mode, and
  the conversation of `history`;
- `history`: where a request's conversation is and what "the same message" means.

It imports only the shared `roller.wire` modules, never another protocol's package.
"""

from __future__ import annotations

from roller.wire.anthropic.codec import CODEC, AnthropicCodec
from roller.wire.anthropic.stream import AnthropicAssembler

__all__ = ["CODEC", "AnthropicAssembler", "AnthropicCodec"]

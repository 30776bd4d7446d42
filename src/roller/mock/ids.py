"""Provider-shaped ids the mock mints: deterministic, unique per server instance.

Rules kept here:
- Every id carries its protocol's real prefix (`msg_01…`, `toolu_01…`, `req_011C…`,
  `chatcmpl-…`, `call_…`, `resp_…`, `fc_…`, `ctc_…`, `tsc_…`, Responses `msg_…`) and a
  body in the real alphabet and length, so harness validators and roller's own decoders
  accept it.
- Uniqueness is guaranteed, not probable: the tail of every id is a bijective scramble of a
  per-instance counter, so two ids of one instance never collide. The head is a keyed
  hash that only makes the id look like a real one.
- Determinism: two instances with the same `namespace` mint the same sequence, so a test
  or a benchmark can be replayed. Concurrent requests may take the ids in another order;
  nothing in roller may infer anything from an id's value.
"""

from __future__ import annotations

import hashlib
import itertools
from typing import Literal

IdKind = Literal[
    "anthropic-message",
    "anthropic-tool-use",
    "anthropic-request",
    "chat-completion",
    "chat-tool-call",
    "responses-response",
    "responses-message",
    "responses-function-call",
    "responses-call",
    "responses-custom-tool-call",
    "responses-tool-search-call",
    "gemini-response",
    "gemini-call",
    "openai-request",
]

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HEX = "0123456789abcdef"

# kind -> (prefix, alphabet, body length); lengths match ids seen from the real APIs.
_SHAPES: dict[IdKind, tuple[str, str, int]] = {
    "anthropic-message": ("msg_01", _BASE62, 22),
    "anthropic-tool-use": ("toolu_01", _BASE62, 22),
    "anthropic-request": ("req_011C", _BASE62, 20),
    "chat-completion": ("chatcmpl-", _BASE62, 29),
    "chat-tool-call": ("call_", _BASE62, 24),
    "responses-response": ("resp_", _HEX, 48),
    "responses-message": ("msg_", _HEX, 48),
    "responses-function-call": ("fc_", _HEX, 48),
    "responses-call": ("call_", _BASE62, 24),
    "responses-custom-tool-call": ("ctc_", _HEX, 48),
    "responses-tool-search-call": ("tsc_", _HEX, 48),
    "gemini-response": ("", _BASE62, 23),
    "gemini-call": ("gcall_", _BASE62, 16),
    "openai-request": ("req_", _HEX, 32),
}

_MASK64 = (1 << 64) - 1


def _scramble(value: int, key: int) -> int:
    """A bijection on 64-bit integers (odd multiply, add, xorshift): unique in, unique out."""
    x = (value * 0x9E3779B97F4A7C15 + key) & _MASK64
    x ^= x >> 31
    x = (x * 0xBF58476D1CE4E5B9) & _MASK64
    x ^= x >> 29
    return x


def _digits(value: int, alphabet: str, width: int) -> str:
    base = len(alphabet)
    out = []
    for _ in range(width):
        value, rem = divmod(value, base)
        out.append(alphabet[rem])
    return "".join(reversed(out))


class IdMint:
    """Mints ids for one mock server instance. Not shared between instances."""

    def __init__(self, namespace: str = "roller-mock") -> None:
        self._namespace = namespace.encode()
        self._key = int.from_bytes(hashlib.blake2b(self._namespace, digest_size=8).digest())
        self._counter = itertools.count(1)

    def mint(self, kind: IdKind) -> str:
        prefix, alphabet, length = _SHAPES[kind]
        n = next(self._counter)
        # 64 bits need 11 base62 digits or 16 hex digits; both fit every body length above.
        tail_width = 11 if alphabet is _BASE62 else 16
        tail = _digits(_scramble(n, self._key), alphabet, tail_width)
        head_width = length - tail_width
        digest = hashlib.blake2b(
            self._namespace + kind.encode() + n.to_bytes(8, "big"), digest_size=32
        ).digest()
        head = _digits(int.from_bytes(digest), alphabet, head_width)
        return prefix + head + tail

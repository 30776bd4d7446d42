"""A recorded HTTP response read as its protocol's output: the one reading finalize and
the gateway share, so both judge "did the response end normally" on the same bytes.

`read_response(codec, status, headers, raw)`:
- streamed means the response's `content-type` is `text/event-stream`;
- the body is content-decoded first (`gzip`/`x-gzip`, `deflate` raw or zlib-wrapped;
  `identity` or none is the body itself): the proxy narrows `accept-encoding` to what
  the standard library decodes, so anything else is a `decode_error`, and the body is
  then not read (its bytes stay on the tape);
- a codec reads it only when there is one (a model call), a response head arrived
  (`status` not None) and the body decoded.

`ResponseReading.terminal` is the fact the status rules (`roller.capture.statuses`) need:
True when the codec read the body to its protocol's terminal event without an error,
False when it read it and the response did not end normally, None when nothing read it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roller.wire.types import Codec, Reassembly


def header(headers: Iterable[Sequence[str]], name: str) -> str | None:
    """The first value of header `name` (lower-case) in a `[name, value]` list."""
    for pair in headers:
        if len(pair) == 2 and pair[0].lower() == name:
            return pair[1]
    return None


def decode_content(raw: bytes, encoding: str | None) -> tuple[bytes, str | None]:
    """Undo a content-encoding; returns (bytes, error message or None)."""
    if not encoding or encoding.lower() == "identity" or not raw:
        return raw, None
    enc = encoding.lower().strip()
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw), None
        if enc == "deflate":
            try:
                return zlib.decompress(raw), None
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS), None
    except zlib.error as exc:
        return raw, f"cannot decode {enc} body: {exc}"
    return raw, f"content-encoding {enc} is not decodable"


@dataclass(frozen=True, slots=True)
class ResponseReading:
    """What a recorded response says, read once."""

    streamed: bool
    content_encoding: str | None
    body: bytes  # after content decoding (the raw bytes when they did not decode)
    decode_error: str | None
    reassembly: Reassembly | None

    @property
    def terminal(self) -> bool | None:
        """Whether the response reached its protocol's terminal event with no error
        (None: no codec read it)."""
        r = self.reassembly
        return None if r is None else r.complete and r.error is None


def read_response(
    codec: Codec | None,
    status: int | None,
    headers: Iterable[Sequence[str]],
    raw: bytes,
) -> ResponseReading:
    """Read one recorded response (rules: module docstring)."""
    headers = list(headers)
    streamed = "text/event-stream" in (header(headers, "content-type") or "").lower()
    encoding = header(headers, "content-encoding")
    body, decode_error = decode_content(raw, encoding)
    reassembly = None
    if codec is not None and status is not None and decode_error is None:
        reassembly = codec.reassemble(body, streamed=streamed, status=status)
    return ResponseReading(streamed, encoding, body, decode_error, reassembly)

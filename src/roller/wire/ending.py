"""How a recorded response ended: the two facts the status rules read off it, with the
least work that gives them.

`response_ending(protocol, status, headers, raw)` -> (streamed, terminal), equal to
`read_response(codec_for(protocol) or None, status, headers, raw)`'s `streamed` and
`terminal` (`roller.wire.response`); `quick_ending(...)` gives the same when it needs no
full reading, else None. A protocol with a terminal-only reader (Anthropic
Messages: `roller.wire.anthropic.ending`) decides a 2xx stream that is not
content-encoded without reassembling it; every other response, and every stream that
reader leaves undecided, is read in full. The gateway's call rows need only these facts
(`roller.gateway.rows`); finalize needs the whole reassembly and reads it in full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from roller.wire import anthropic, codec_for
from roller.wire.response import read_response
from roller.wire.types import ProtocolName

_Reader = Callable[[bytes], bool | None]
# Per protocol: a 2xx body's `terminal` fact without its reassembly (None: not decided),
# for a stream and for a whole body.
_TERMINAL_READERS: Final[dict[ProtocolName, tuple[_Reader, _Reader]]] = {
    "anthropic-messages": (anthropic.stream_terminal, anthropic.whole_terminal),
}


def response_ending(
    protocol: ProtocolName | None,
    status: int | None,
    headers: Iterable[Sequence[str]],
    raw: bytes,
) -> tuple[bool, bool | None]:
    """(streamed, terminal) of the response, as `read_response` reads them."""
    headers = headers if isinstance(headers, (tuple, list)) else list(headers)
    if protocol in _TERMINAL_READERS:
        quick = quick_ending(protocol, status, headers, raw)
        if quick is not None:
            return quick
    codec = None if protocol is None else codec_for(protocol)
    reading = read_response(codec, status, headers, raw)
    return reading.streamed, reading.terminal


def quick_ending(
    protocol: ProtocolName | None,
    status: int | None,
    headers: Sequence[Sequence[str]],
    raw: bytes,
) -> tuple[bool, bool] | None:
    """`response_ending` when a terminal-only reader decides it (a few µs a KiB), else
    None: only the full reading can."""
    readers = None if protocol is None else _TERMINAL_READERS.get(protocol)
    if readers is None or status is None or not 200 <= status < 300:
        return None
    content_type: str | None = None
    for pair in headers:  # `header`'s reading of both, in one pass
        if len(pair) == 2:
            name = pair[0].lower()
            if name == "content-encoding":
                return None
            if name == "content-type" and content_type is None:
                content_type = pair[1]
    streamed = "text/event-stream" in (content_type or "").lower()
    terminal = readers[0 if streamed else 1](raw)
    return None if terminal is None else (streamed, terminal)

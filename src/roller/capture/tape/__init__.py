"""The tape: the proxy's append-only working record of HTTP exchanges.

A tape is a directory of segment files `tape-NNNNNN.rtape`. Each segment is a sequence of
frames; a frame is one JSON header line, exactly `n` payload bytes, then `\\n`. The frame
kinds (`seg`, `req`, `body`, `resp`, `chunk`, `end`) and their meta are specified in
docs/architecture.md ("roller.capture.tape"). `meta` types the metas (`RequestMeta`,
`ResponseMeta`, `EndMeta`, `SegmentHeader`), `writer` appends (the proxy's hot path),
`reader` turns a directory back into exchanges and never raises for damaged content
(`framing` is its one pass over the frames: where each lies, and the problems),
`compat` converts the frames of older tape versions before they are typed.
"""

from __future__ import annotations

from roller.capture.tape.format import OUTCOMES, TAPE_VERSION, Outcome, segment_name
from roller.capture.tape.meta import (
    EndMeta,
    ExchangeError,
    Redaction,
    RequestMeta,
    ResponseMeta,
    SegmentHeader,
    TapeMeta,
)
from roller.capture.tape.reader import (
    ExchangeRef,
    TapeExchange,
    TapeIndex,
    TapeReadResult,
    TapeSource,
    index_tape,
    read_tape,
)
from roller.capture.tape.writer import (
    DEFAULT_FSYNC_INTERVAL,
    DEFAULT_SEGMENT_MAX_BYTES,
    TapeOpenError,
    TapeWriter,
)

__all__ = [
    "DEFAULT_FSYNC_INTERVAL",
    "DEFAULT_SEGMENT_MAX_BYTES",
    "OUTCOMES",
    "TAPE_VERSION",
    "EndMeta",
    "ExchangeError",
    "ExchangeRef",
    "Outcome",
    "Redaction",
    "RequestMeta",
    "ResponseMeta",
    "SegmentHeader",
    "TapeExchange",
    "TapeIndex",
    "TapeMeta",
    "TapeOpenError",
    "TapeReadResult",
    "TapeSource",
    "TapeWriter",
    "index_tape",
    "read_tape",
    "segment_name",
]

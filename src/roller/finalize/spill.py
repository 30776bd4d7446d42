"""Decoded calls between finalize's two passes, kept on disk instead of in memory.

The first pass decodes each exchange once (the costly part: parsing the request and
reassembling the response) and keeps only its `CallFacts` in memory; what assembly
needs besides is put here, pickled, one entry per call in arrival order: the decoded
call without its bodies, context and request texts (the tape has the bodies), and the
context's record JSON (`roller.capture.context.context_json`) unless it is the request
body itself, which the second pass reads back from the tape. Entries are read back by
position (`get(i)`), any number of times. An anonymous temporary file: nothing is left
behind, whatever happens.
"""

from __future__ import annotations

import pickle
import tempfile
from array import array
from dataclasses import dataclass, replace
from pathlib import Path

from roller.capture.context import context_json
from roller.finalize.decode import DecodedCall

_SAME_AS_BODY = b""  # the context JSON is the request body: read it from the tape


@dataclass(frozen=True)
class SpilledCall:
    """A decoded call without its bodies (`exchange` holds the metas only) and context."""

    call: DecodedCall
    context_json: bytes | None  # None: no context; b"": the request body's own bytes

    def context_from(self, body: bytes) -> bytes | None:
        return body if self.context_json == _SAME_AS_BODY else self.context_json


class Spill:
    def __init__(self, directory: Path) -> None:
        self._file = tempfile.TemporaryFile(dir=directory)
        self._offsets = array("q", [0])

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def put(self, call: DecodedCall) -> None:
        ctx = None if call.context is None else context_json(call.context)
        if ctx is not None and ctx == call.exchange.request_body:
            ctx = _SAME_AS_BODY
        slim = replace(
            call,
            context=None,
            texts=(),
            body=b"",
            exchange=replace(call.exchange, request_body=b"", chunks=()),
        )
        self._file.seek(self._offsets[-1])
        self._file.write(pickle.dumps(SpilledCall(slim, ctx), pickle.HIGHEST_PROTOCOL))
        self._offsets.append(self._file.tell())

    def get(self, i: int) -> SpilledCall:
        start, stop = self._offsets[i], self._offsets[i + 1]
        self._file.seek(start)
        spilled: SpilledCall = pickle.loads(self._file.read(stop - start))
        return spilled

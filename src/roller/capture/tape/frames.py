"""The bytes of each frame the tape writer emits: its templates and its meta encoding.

The frame layout is docs/architecture.md's ("roller.capture.tape"); this module holds the
byte templates the writer (`writer.TapeWriter`) formats frames from, so that a frame costs
one `%` format, no JSON library for its fixed keys. Facts they rely on:
- Kinds and exchange ids are plain ASCII: nothing in them to escape.
- A meta frame is its header line, an empty payload and a newline: one buffer, formatted
  from the exchange id's bytes, `t` and the encoded meta (`REQ_FRAME`, `RESP_FRAME`,
  `END_FRAME`); `META_HEADER` is the header line alone for any kind.
- A meta goes through `dumps_header` (orjson, or `json`'s escaping for what orjson
  refuses), which gives the bytes encoding the whole header would: the fixed keys before
  it are ASCII and integers either way.
- `END_OK_FRAME` is a whole `end` frame, meta included, for the common ending: an outcome
  of `OUTCOMES` (ASCII words), no error, no answer of roller's, no extra keys, every
  count an `int` (not a bool): orjson writes exactly those decimal digits and `null`s.
- A `body` or `chunk` frame's header is its exchange's prefix up to `"t":` (made once
  at `begin`), then `DATA_HEAD`.
Tests check each template against encoding the whole header (tests/capture/test_tape.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from roller.capture.tape.format import OUTCOMES, dumps_header
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta, TapeMeta

TYPED: Final = (RequestMeta, ResponseMeta, EndMeta)
META_HEADER: Final = b'{"k":"%b","x":"%b","t":%d,"n":0,"meta":%b}\n'
# A meta frame whole (header line, empty payload, newline), by kind: exchange id, t, meta.
REQ_FRAME: Final = b'{"k":"req","x":"%b","t":%d,"n":0,"meta":%b}\n\n'
RESP_FRAME: Final = b'{"k":"resp","x":"%b","t":%d,"n":0,"meta":%b}\n\n'
END_FRAME: Final = b'{"k":"end","x":"%b","t":%d,"n":0,"meta":%b}\n\n'
PLAIN_OUTCOMES: Final = frozenset(OUTCOMES)
END_OK_FRAME: Final = (  # exchange id, t, outcome, the five counts in EndMeta's order
    b'{"k":"end","x":"%b","t":%d,"n":0,"meta":{"outcome":"%b","error":null,'
    b'"client_status":%d,"upstream_status":%d,"request_bytes":%d,"response_bytes":%d,'
    b'"client_bytes":%d}}\n\n'
)
DATA_HEAD: Final = b'%b%d,"n":%d}\n'  # a body or chunk frame's header after its prefix


def encode_meta(meta: TapeMeta | Mapping[str, Any]) -> bytes:
    """A meta as the tape holds it: a typed record through its JSON form."""
    return dumps_header(meta.to_json() if isinstance(meta, TYPED) else meta)


def body_frames(
    out: list[bytes], prefix: bytes, parts: Sequence[bytes], t: int | None = None
) -> None:
    """Append one `body` frame per part to `out` (the parts are not copied)."""
    now = time.time_ns() if t is None else t
    for part in parts:
        out.append(DATA_HEAD % (prefix, now, len(part)))
        if part:
            out.append(part)
        out.append(b"\n")

"""JSON read by orjson with exactly Python's meaning (`json.loads`), where it matters for speed.

`loads(data)` gives what `json.loads(data)` gives, value or exception: orjson reads
first, and the data goes to `json.loads` wherever the two readers could differ —
orjson refuses lone-surrogate escapes, NaN/Infinity, numbers past a double, a BOM and
other encodings (its error sends the data to `json.loads`, whose exception is then the
one raised), and it reads an integer beyond 64 bits as a float without an error, so a
value is taken from orjson only when the data holds no run of digits long enough for
such an integer (`may_hold_wide_integer`) or when orjson writes the value back as the
very bytes read (an integer turned float would be written differently: `read`). orjson
reads nesting up to 1,024 levels but writes only 255: a deeper value is left to
`json.loads` and the record's own writer (`roller.capture.context`), which says whether
a record can hold it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# ASCII digits -> "1", "-" kept, every other byte -> NUL. The shortest integers outside
# orjson's range are 20 digits (18446744073709551616) and "-" with 19 (-9223372036854775809).
_MARKS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x2D if b == 0x2D else 0 for b in range(256))
_WIDE, _WIDE_NEGATIVE = b"1" * 20, b"-" + b"1" * 19


def may_hold_wide_integer(data: bytes) -> bool:
    """Whether `data` holds a run of digits an integer orjson reads as a float needs."""
    marked = data.translate(_MARKS)
    return _WIDE in marked or _WIDE_NEGATIVE in marked


def read(data: bytes) -> tuple[Any, bytes | None]:
    """`json.loads(data)` (its exceptions too), and orjson's writing of the value when
    orjson read it (None when `json.loads` did): `data` itself when it was written so."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data), None
    try:
        written = orjson.dumps(value)
    except orjson.JSONEncodeError:  # nested past the 255 levels orjson writes
        return json.loads(data), None
    if written == data:
        return value, data
    if may_hold_wide_integer(data):
        return json.loads(data), None
    return value, written


def loads(data: bytes) -> Any:
    """`json.loads(data)`, read by orjson wherever that gives the same."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
    return json.loads(data) if may_hold_wide_integer(data) else value

"""Primary keys of the gateway's rows.

- `new_id`: a random UUID (version 4) for a session or a note. A session id is handed to
  clients and named in parent claims, so it carries no time and nothing to predict.
- `call_row_id`: a time-ordered UUID (version 7, RFC 9562 §5.7: 48 bits of Unix
  milliseconds, then 74 random bits) for a call row. A random key lands each insert on
  another leaf page of the primary key's index: under load SQLite's WAL took ~81 page
  writes per 30-row batch (strace, json-small at concurrency 16) and PostgreSQL dirties a
  page per row likewise; time-ordered keys fill the index at its right edge. The random
  bits come from a generator seeded from `os.urandom` (reseeded in a forked child), not
  a system call per row: a call row's id orders and names the row, it grants nothing.
  Nothing reads time or order from it: `started_at` and `ended_at` are the row's times.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from typing import Final

_RANDOM = random.Random()  # seeded from os.urandom
os.register_at_fork(after_in_child=_RANDOM.seed)
_BITS = _RANDOM.getrandbits
# The low 80 bits: version 7 in bits 76-79, variant 0b10 in bits 62-63, random elsewhere.
_RANDOM_PART: Final = ((1 << 80) - 1) & ~((0xF << 76) | (0b11 << 62))
_VERSION_VARIANT: Final = (0x7 << 76) | (0b10 << 62)


def new_id() -> str:
    return str(uuid.uuid4())


def call_row_id(ms: int | None = None) -> str:
    """A UUIDv7 for a call row, of `ms` (Unix milliseconds; now when None)."""
    if ms is None:
        ms = time.time_ns() // 1_000_000
    n = (ms << 80) | (_BITS(80) & _RANDOM_PART) | _VERSION_VARIANT
    h = n.to_bytes(16, "big").hex()  # (`to_bytes().hex()`: cheaper than a format spec)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

"""Server-sent-event framing for the mock's streamed replies.

A local encoder because `roller.wire.sse` (the decoder's home) had no encoder when the mock
was written; switch to `roller.wire.sse.encode_event` once it exists. Rules kept: one
`data:` line per payload line (the WHATWG decoder joins them back with "\\n"), an optional
`event:` line first, and a blank line ending every event.
"""

from __future__ import annotations

import json
from typing import Any


def encode_event(data: str, event: str | None = None) -> bytes:
    lines = [] if event is None else [f"event: {event}"]
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def json_event(payload: Any, event: str | None = None) -> bytes:
    """One event whose data is `payload` as compact JSON (what the real APIs send)."""
    return encode_event(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), event)

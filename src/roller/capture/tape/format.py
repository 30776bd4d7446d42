"""The tape's on-disk vocabulary: segment names, frame kinds, outcomes, version.

Shared by the writer and the reader so neither can drift from the other. The frame layout
itself is specified in docs/architecture.md ("roller.capture.tape").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

TAPE_VERSION = 1
SEGMENT_PREFIX = "tape-"
SEGMENT_SUFFIX = ".rtape"

JSONObject = dict[str, Any]

Outcome = Literal[
    "ok",
    "rejected",
    "no_upstream",
    "upstream_connect_error",
    "upstream_disconnected",
    "upstream_timeout",
    "client_disconnected",
    "proxy_shutdown",
    "proxy_error",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

FRAME_KINDS = frozenset({"seg", "req", "body", "resp", "chunk", "end"})
META_KINDS = frozenset({"req", "resp", "end"})

_SEGMENT_RE = re.compile(r"^tape-(\d{6,})\.rtape$")


def segment_name(number: int) -> str:
    return f"{SEGMENT_PREFIX}{number:06d}{SEGMENT_SUFFIX}"


def segment_number(name: str) -> int | None:
    match = _SEGMENT_RE.match(name)
    return int(match.group(1)) if match else None


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """The segment files of a tape directory in writing order (number ascending)."""
    found: list[tuple[int, Path]] = []
    for entry in directory.iterdir():
        number = segment_number(entry.name)
        if number is not None and entry.is_file():
            found.append((number, entry))
    found.sort()
    return found


def dumps_header(obj: Mapping[str, Any]) -> bytes:
    # ensure_ascii keeps a header line pure ASCII even when a header value was not valid
    # UTF-8 (it is then held as lone surrogates, which json escapes as \\udcXX).
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode("ascii")

"""Eliding base64 blobs from values shown in the HTML viewer.

Captures carry images, documents and encrypted reasoning as base64 text; inlined into a
page they make it slow to load and useless to read. A string is elided when it is a
`data:…;base64,` URL or a run of base64 characters of at least `LIMIT` characters with
no whitespace-separated words; it is replaced by a marker that gives its length and a
sha256 prefix, so two equal blobs still look equal. Only the page is changed, never the
capture.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

LIMIT = 256
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_DATA_URL = re.compile(r"data:[^;,]{0,100};base64,", re.ASCII)


def is_blob(text: str) -> bool:
    if text.startswith("data:") and _DATA_URL.match(text):  # startswith: the cheap test first
        return len(text) > 64
    return len(text) >= LIMIT and _BASE64.fullmatch(text) is not None


def marker(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = m.group(0) if (m := _DATA_URL.match(text)) else ""
    return f"[{head}base64 elided: {len(text)} chars, sha256 {digest}]"


def elide(value: Any) -> tuple[Any, int]:
    """`value` with every blob string replaced by its marker, and how many were."""
    count = 0

    def walk(v: Any) -> Any:
        nonlocal count
        if isinstance(v, str):
            if is_blob(v):
                count += 1
                return marker(v)
            return v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value), count

"""Plain HTTP for tests that speak to the mock without an SDK (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def request(
    url: str,
    body: bytes | None = None,
    *,
    method: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def post_json(url: str, body: Any) -> tuple[int, Any]:
    status, _, raw = request(url, json.dumps(body).encode())
    return status, json.loads(raw)


def sse(raw: bytes) -> list[tuple[str | None, str]]:
    """(event, data) pairs of a whole SSE body (enough of the WHATWG rules for the mock)."""
    events = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        events.append((name, "\n".join(data)))
    return events

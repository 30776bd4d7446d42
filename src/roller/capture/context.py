"""A call's context: the request body's exact bytes and the `context` value records hold.

Rules kept (docs/protocol.md, "Calls"):
- `context` is the request body parsed as JSON (`parse_context`): None for an empty
  body, and None with a `context_not_json` error for one that does not parse;
  `context_sha256` hashes the exact bytes. Finalize decodes with this function and every
  reader of a compact/v3 capture rebuilds `context` from the stored bytes with it, so
  the two can never disagree.
- `context_json(value)` is the record's serialization of a context: the bytes
  `CallRecord.model_dump_json` writes for the field (pydantic's own serializer for any
  value), so a record serialized without its context and `with_context` spliced in is
  byte for byte the record serialized whole. A harness that sends compact JSON sends
  exactly these bytes: such a body can be rebuilt from the record (`body_ref`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pydantic_core


@dataclass(frozen=True, slots=True)
class ParsedContext:
    value: Any
    error: str | None  # why the body is not JSON; None when it parsed or was empty

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_context(body: bytes) -> ParsedContext:
    if not body:
        return ParsedContext(None, None)
    try:
        return ParsedContext(json.loads(body), None)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return ParsedContext(None, f"request body is not JSON: {exc}")


def context_json(value: Any) -> bytes:
    """The bytes a call record holds for this context value."""
    return pydantic_core.to_json(value)


_PLACEHOLDER = b',"context":null,"context_sha256":'


def with_context(line: bytes, context: bytes | None) -> bytes:
    """A call record serialized with `context: null`, with `context` (its JSON) in place.

    The first `"context":null,"context_sha256":` of the line is the record's own field:
    the fields before it (ids, kind, the request head) hold strings and lists only, and a
    quote inside a string is escaped, so the sequence cannot occur earlier."""
    if context is None:
        return line
    at = line.index(_PLACEHOLDER)
    head = at + len(b',"context":')
    return line[:head] + context + line[head + len(b"null") :]

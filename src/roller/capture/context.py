"""A call's context: the request body's exact bytes and the `context` value records hold.

Rules kept (docs/protocol.md, "Calls"):
- `context` is the request body parsed as JSON (`parse_context`): None for an empty
  body, and None with a `context_not_json` error for one that does not parse (also one
  Python's reader refuses: an integer past 4,300 digits, nesting past its recursion
  limit — and one it reads but no record can hold: a lone surrogate escape such as
  `"\\ud800"`, which JSON's strict readers and pydantic's writer refuse; a body never
  aborts a reader);
  `context_sha256` hashes the exact bytes. Finalize decodes with this function and every
  reader of a compact/v3 capture rebuilds `context` from the stored bytes with it, so
  the two can never disagree.
- `context_json(value)` is the record's serialization of a context: the bytes
  `CallRecord.model_dump_json` writes for the field (pydantic's own serializer for any
  value), so a record serialized without its context and `with_context` spliced in is
  byte for byte the record serialized whole. A harness that sends compact JSON sends
  exactly these bytes: such a body can be rebuilt from the record (`body_ref`).
- Speed without a second meaning: `parse_context` reads with orjson, several times
  Python's reader on the bodies harnesses send, and gives exactly what `json.loads`
  gives (`roller.capture.exact_json`). A value orjson read holds none of what orjson
  writes differently from pydantic (NaN, integers beyond 64 bits, lone surrogates), so
  orjson's writing of it is `context_json`'s bytes: `ParsedContext.json`, the record's
  context JSON made once while parsing (the body itself when the harness sent compact
  JSON, the common case).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic_core

from roller.capture import exact_json


@dataclass(frozen=True, slots=True)
class ParsedContext:
    value: Any
    error: str | None  # why the body is not JSON; None when it parsed or was empty
    # the record's JSON of `value` when the fast reader made it; None without a value, or
    # when `json.loads` read the body (`record_json` then asks pydantic)
    json: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def record_json(self) -> bytes | None:
        """The bytes a call record holds for this context (`context_json`); None without one."""
        if self.value is None:  # `null` too: the record holds no context
            return None
        return self.json if self.json is not None else context_json(self.value)


def parse_context(body: bytes) -> ParsedContext:
    return _parse(body, exact_json.read)


def parse_context_slowly(body: bytes) -> ParsedContext:
    """`parse_context` by Python's reader alone: the meaning `parse_context` keeps."""
    return _parse(body, lambda data: (json.loads(data), None))


def _parse(body: bytes, read: Callable[[bytes], tuple[Any, bytes | None]]) -> ParsedContext:
    if not body:
        return ParsedContext(None, None)
    try:
        value, written = read(body)
    except (UnicodeDecodeError, ValueError) as exc:  # also an integer past 4300 digits
        return ParsedContext(None, f"request body is not JSON: {exc}")
    except RecursionError:  # JSON nested deeper than Python's reader goes
        return ParsedContext(None, "request body is JSON nested too deeply to read")
    if written is None and value is not None:  # Python's reader took it: can a record hold it?
        try:
            written = context_json(value)
        except pydantic_core.PydanticSerializationError as exc:  # a lone surrogate escape
            return ParsedContext(None, f"request body is not JSON a record can hold: {exc}")
    return ParsedContext(value, None, written)


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


def with_context_ref(line: bytes, ref: str) -> bytes:
    """A call record serialized with `context: null` and no `context_ref`, with its
    `context_ref` (compact/v3) in place: the field follows `context`, as the record's
    serializer writes it (the same first `"context":null,"context_sha256":` as
    `with_context`); `ref` is a hex digest, a JSON string as it is."""
    head = line.index(_PLACEHOLDER) + len(b',"context":null,')
    return b'%s"context_ref":"%s",%s' % (line[:head], ref.encode(), line[head:])

"""Call records read to be checked: every field as `CallRecord` reads it, the context's
value skipped.

`unread_context_call(line) -> CallRecord | None` is the fast path of the record a
validation checks (`roller validate`, and every export, which validates first;
`roller.capture.reader.checked_call` falls back to the full reading when it gives None):
with it, the verdict is `validate_json(line, CallRecord)`'s — valid or not, and the same
error when not — and `context` is None when the line's context is null,
`CONTEXT_NOT_READ` otherwise. A
record's context is its whole request body (tens of KB): reading it into Python objects
was half of reading a call line (the benchmark's 77 KB lines: 242 µs, 112 without it)
and nothing in a check looks inside it, only at whether it is null.

How the verdict stays the full reading's:
- the fast path only ever answers "valid": the line's top-level keys read by msgspec
  (`Raw` values, not parsed into objects: ~30 µs a 77 KB line) must all be keys a
  record carries, `context` among them; then the record is validated by `CallRecord`'s
  own fields and rules with the `context` key left unread (pydantic-core still reads it
  through to its end, with the same JSON rules as a full reading: invalid UTF-8, a bad
  escape, a number out of range, nesting past its limit fail both alike —
  tests/capture/test_call_check.py); nullness comes from the key's raw value (the last
  of repeated keys, as pydantic takes it);
- anything else — a key no record has, `context` missing, a line msgspec refuses, a
  record the fast path does not validate — gives None: the full reading then raises
  the error a reader reports, or upgrades a record of an older shape.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from pydantic import ConfigDict, Field, ValidationError

from roller.capture.models import CallRecord

_NOT_A_KEY: Final = "\x00context, not read"


class _ContextNotRead:
    """A non-null context a check did not read."""

    def __repr__(self) -> str:
        return "CONTEXT_NOT_READ"


CONTEXT_NOT_READ: Final = _ContextNotRead()


class _CallChecked(CallRecord):
    # Keys only by their names as written (aliases), so `context` matches no field and
    # is skipped as an extra, never built.
    model_config = ConfigDict(extra="ignore", populate_by_name=False)
    context: Any = Field(default=None, validation_alias=_NOT_A_KEY)


_TOP: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
# The keys a record carries: each field's alias, else its name.
_KEYS: Final = frozenset(f.alias or name for name, f in CallRecord.model_fields.items())


def unread_context_call(line: bytes) -> CallRecord | None:
    """The record of one calls.jsonl line with its context left unread, when the fast
    path can say it is valid; None leaves the line to the full reading (module
    docstring)."""
    read = _read(line)
    return None if read is None else read[0]


def unread_context_json(line: bytes) -> tuple[CallRecord, bytes | None] | None:
    """`unread_context_call`, with the context's JSON text as the line holds it (None
    when null): what `roller export calls` writes as the request, unparsed."""
    read = _read(line)
    if read is None:
        return None
    call, raw = read
    return call, None if raw is None else bytes(raw)


def _read(line: bytes) -> tuple[CallRecord, msgspec.Raw | None] | None:
    try:
        top = _TOP.decode(line)
    except msgspec.DecodeError:
        return None
    if "context" not in top or not top.keys() <= _KEYS:
        return None
    try:
        call = _CallChecked.model_validate_json(line)
    except ValidationError:
        return None
    raw = top["context"]
    if len(raw) < 16 and bytes(raw).strip() == b"null":
        return call, None
    return call.model_copy(update={"context": CONTEXT_NOT_READ}), raw

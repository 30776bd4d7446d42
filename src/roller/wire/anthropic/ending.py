"""How an Anthropic Messages response ended, read without reassembling it.

`stream_terminal(body)`: for a 2xx `text/event-stream` body that is not content-encoded,
the `terminal` fact `roller.wire.response.read_response` gives (the reassembly reached
`message_stop` with no error), or None when this reader does not decide it (the caller
reassembles). A call row needs only that fact of its response; reassembly also merges
every delta into the message, which costs about two thirds of the reading.
`whole_terminal(body)`: the same fact for a 2xx body that is not a stream and not
content-encoded (a JSON message), or None: a JSON object orjson parses, where orjson
parses only what the standard library's decoder parses too (`roller.wire.jsonvalues.
orjson_fails_alike`), is what `reassemble_body` reads as JSON, with the same keys and
strings (values differ at most by an integer past 64 bits, which no fact here reads),
and its `whole_body` is complete without an error exactly when the object is not an
error body (`stream.is_error_body`); anything else (leading space, another JSON value, a
body only the decoder reads, SSE in a JSON response) is left to the full reading.

Facts it relies on (tests/wire/test_anthropic_ending.py compares the two readings on
generated, cut and mutated streams):
- it decides only a body in the form servers write with at least one event
  (`roller.wire.sse.well_formed_fields`): `reassemble_body` reads such a body as a
  stream (it has events) with nothing discarded, so `terminal` is the assembler's
  `complete and error is None`;
- `AnthropicAssembler` (`roller.wire.anthropic.stream`) is complete without an error
  exactly when no event is an `error` (wherever it comes), a `message_start` with a
  `message` object started the message, and a `message_stop` came after it. An event's
  kind is its JSON `type` when that is a non-empty string, else its SSE event name;
  data that is not a JSON object merges nothing; the first `message_start` with a
  message object counts (a later one is kept unmerged), `ping` and everything after
  `message_stop` but an `error` change nothing. No other event moves those facts, and
  the assembler raises on none (it keeps what it cannot merge);
- each event's data is parsed as the assembler parses it (`json_values`, the values
  `parse_json` gives);
- only an event whose kind is `error`, `message_start` or `message_stop` can move the
  fact, and such an event's name or data holds `error` or `message_st` as bytes unless
  its JSON spells the kind (or the `type` key) with a `\\u` escape, which for an ASCII
  character is always `\\u00XX`: so in a body without `\\u00`, only the events holding
  one of those two words are parsed (`sse.fields_holding`: at burst's 2,273-byte, 17-event
  reply, the two of them: 21 µs where parsing all 17 took 37). Other events, and a
  body with `\\u00` anywhere, are read as before: every event parsed.
"""

from __future__ import annotations

import orjson

from roller.wire.anthropic.stream import is_error_body
from roller.wire.jsonvalues import json_values, orjson_fails_alike
from roller.wire.sse import fields_holding, well_formed, well_formed_fields

__all__ = ["stream_terminal", "whole_terminal"]

# Every kind that can move the fact (`error`, `message_start`, `message_stop`) holds one.
_KIND_WORDS = (b"message_st", b"error")


def whole_terminal(body: bytes) -> bool | None:
    """A whole JSON body's `terminal` fact, or None: not decided here (module docstring)."""
    if body[:1] != b"{" or not orjson_fails_alike(body):
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return not is_error_body(value)


def stream_terminal(body: bytes) -> bool | None:
    """The stream's `terminal` fact, or None: not decided here (module docstring)."""
    if not well_formed(body):
        return None
    every = b"\\u00" in body  # a kind may be spelled with escapes: every event is read
    fields = (well_formed_fields(body) or []) if every else fields_holding(body, _KIND_WORDS)
    datas = [data for _, data in fields]
    # the parse's guard over the body, or over the few events parsed alone
    values = json_values(datas, body if every else b"\n".join(datas))
    started = stopped = False
    for (name, _), obj in zip(fields, values, strict=True):
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if not isinstance(kind, str) or not kind:
            kind = "" if name is None else name.decode()
        if kind == "error":
            return False
        if stopped or kind == "ping":
            continue
        if kind == "message_start":
            started = started or isinstance(obj.get("message"), dict)
        elif started and kind == "message_stop":
            stopped = True
    return stopped

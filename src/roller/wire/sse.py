"""Server-sent events: an incremental, sans-I/O decoder and a one-event encoder.

`SSEDecoder` implements the WHATWG "event stream interpretation" algorithm
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
over bytes that may be split anywhere: inside a UTF-8 sequence, between CR and LF, inside
a field name. Rules it keeps, each from the spec:

- the stream is UTF-8; invalid sequences decode to U+FFFD, never an exception;
- one leading BOM is dropped; CRLF, LF and CR all end a line;
- `:` starts a comment; a field without `:` has an empty value; one space after `:` is
  dropped; unknown fields are ignored;
- `data` lines join with "\\n"; a block with no `data` field dispatches nothing;
- the last event id persists across events until another `id` field changes it (an `id`
  holding NUL is ignored); `retry` counts only when it is all ASCII digits;
- at end of stream an unterminated event is discarded, never dispatched. `close()`
  therefore returns no events; what it discarded is kept in `discarded`, so a codec can
  say precisely how a truncated stream ended.

`SSEEvent.retry` carries the `retry` value given inside that event's own block (the spec
only feeds it to the reconnection timer; a recorder wants to see it).

`decode_body(body)` decodes a whole recorded body: the decoder's events and `discarded`.
A body in the form servers write — strict UTF-8, no BOM, no CR, every block an optional
`event: ` line and one `data: ` line closed by a blank line — is read by one regular
expression (`_WELL_FORMED`), where the algorithm gives exactly those events: each
block's `event` and `data` are the text after `: `, no id, no retry, nothing discarded.
Any other body takes the decoder (tests/wire/test_sse.py checks the two agree).
`well_formed_fields(body)` gives the same blocks of such a body as raw (event, data)
bytes, for a reader that needs a few facts of every event and not its text: UTF-8 never
encodes a byte 0x0A inside a character, so the bytes expression matches where the text
one does, and each data's bytes are its text's encoding. `well_formed(body)` says only
whether there are such blocks (one expression over the body, no block made), and
`fields_holding(body, words)` gives those of its blocks whose event name or data holds
one of `words`, in order: in such a body a blank line ends a block and nothing else, so
the block around a word found in the body is the text between the blank lines around it.
"""

from __future__ import annotations

import codecs
import re

from roller.wire.types import SSEEvent

__all__ = [
    "SSEDecoder",
    "SSEEvent",
    "decode_body",
    "encode_event",
    "fields_holding",
    "well_formed",
    "well_formed_fields",
]

_LINE_END = re.compile(r"\r\n|\r|\n")
_DIGITS = re.compile(r"[0-9]+")
_WELL_FORMED = re.compile(r"(?:event: ([^\n]*)\n)?data: ([^\n]*)\n\n")
_WELL_FORMED_BYTES = re.compile(rb"(?:event: ([^\n]*)\n)?data: ([^\n]*)\n\n")
_WELL_FORMED_BODY = re.compile(rb"(?:(?:event: [^\n]*\n)?data: [^\n]*\n\n)+")


def decode_body(body: bytes) -> tuple[list[SSEEvent], str | None]:
    """A whole stream: the events `SSEDecoder` gives for `body`, and its `discarded`."""
    events = _well_formed(body)
    if events is not None:
        return events, None
    decoder = SSEDecoder()
    events = decoder.feed(body)
    events += decoder.close()
    return events, decoder.discarded


def _well_formed(body: bytes) -> list[SSEEvent] | None:
    """The events of a body in the form servers write (module docstring), else None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text or text.startswith("\ufeff"):
        return None
    events: list[SSEEvent] = []
    pos = 0
    for match in _WELL_FORMED.finditer(text):
        if match.start() != pos:
            return None
        pos = match.end()
        events.append(_event(match[2], match[1] or None))
    return events if pos == len(text) else None


_new_event = object.__new__
_SETTERS = tuple(SSEEvent.__dict__[name].__set__ for name in ("data", "event", "id", "retry"))


def _event(data: str, event: str | None) -> SSEEvent:
    """`SSEEvent(data=data, event=event)`, its slots set directly: a frozen dataclass's
    `__init__` sets each field through `object.__setattr__` (1.5 µs an event, twice this;
    a streamed call has tens of events). tests/wire/test_sse.py compares the two."""
    made = _new_event(SSEEvent)
    set_data, set_event, set_id, set_retry = _SETTERS
    set_data(made, data)
    set_event(made, event)
    set_id(made, None)
    set_retry(made, None)
    return made


def well_formed_fields(body: bytes) -> list[tuple[bytes | None, bytes]] | None:
    """Each event's (`event` or None, `data`) as bytes when `body` is in the form servers
    write (the events `decode_body` gives, encoded), else None."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if b"\r" in body or body.startswith(b"\xef\xbb\xbf"):
        return None
    fields: list[tuple[bytes | None, bytes]] = []
    pos = 0
    for match in _WELL_FORMED_BYTES.finditer(body):
        if match.start() != pos:
            return None
        pos = match.end()
        fields.append((match[1] or None, match[2]))
    return fields if pos == len(body) else None


def well_formed(body: bytes) -> bool:
    """Whether `body` is in the form servers write with at least one event: whether
    `well_formed_fields(body)` gives any."""
    if b"\r" in body or body.startswith(b"\xef\xbb\xbf"):
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _WELL_FORMED_BODY.fullmatch(body) is not None


def fields_holding(body: bytes, words: tuple[bytes, ...]) -> list[tuple[bytes | None, bytes]]:
    """The `well_formed_fields` of a `well_formed` body whose event name or data holds
    one of `words` (each of letters, digits and `_`), in order, each once."""
    starts: set[int] = set()
    for word in words:
        at = body.find(word)
        while at >= 0:
            starts.add(body.rfind(b"\n\n", 0, at) + 2)  # after the blank line before it
            # On from the block's end: another hit in it names the same block, and each
            # block is scanned once however often it holds the word.
            at = body.find(word, body.find(b"\n\n", at) + 2)
    # (no blank line before: the first block, at 0 — rfind's -1 + 2 is 1, a byte into it)
    fields: list[tuple[bytes | None, bytes]] = []
    for start in sorted(0 if s == 1 else s for s in starts):
        match = _WELL_FORMED_BYTES.match(body, start)
        assert match is not None  # a well-formed body's block starts there
        fields.append((match[1] or None, match[2]))
    return fields


class SSEDecoder:
    """Incremental event-stream parser: `feed(bytes) -> list[SSEEvent]`, then `close()`."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # text of the current, unterminated line
        self._skip_lf = False  # the previous chunk ended with CR; a leading LF belongs to it
        self._at_start = True  # no text seen yet: a BOM may still come
        self._data: list[str] = []
        self._has_data = False
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None
        self._block_open = False  # a field line has been seen since the last blank line
        self._closed = False
        self.discarded: str | None = None
        """After `close()`: the text of an event the stream ended inside (None if none)."""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode `chunk` and return the events it completes, in order."""
        if self._closed:
            raise ValueError("SSEDecoder.feed() after close()")
        return self._feed_text(self._utf8.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """End of stream. Returns the events still owed: always none, by the spec's rule
        that an unterminated event is discarded (see `discarded`)."""
        if self._closed:
            return []
        events = self._feed_text(self._utf8.decode(b"", True))
        self._closed = True
        tail = "".join(self._pending)
        self._pending = []
        if tail:
            self._consume_line(tail, events)
        if self._block_open:
            self.discarded = self._describe_open_block()
        return events

    def _describe_open_block(self) -> str:
        parts: list[str] = []
        if self._event:
            parts.append(f"event: {self._event}")
        parts.extend(f"data: {line}" for line in self._data)
        return "\n".join(parts) or "(fields without data)"

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if self._at_start:
            self._at_start = False
            if text[0] == "\ufeff":
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        if "\n" not in text and "\r" not in text:
            if text:
                self._pending.append(text)
            return []
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
        events: list[SSEEvent] = []
        start = 0
        for match in _LINE_END.finditer(text):
            self._consume_line(text[start : match.start()], events)
            start = match.end()
        rest = text[start:]
        if rest:
            self._pending.append(rest)
        elif text.endswith("\r"):
            # A CR ending the chunk may be the first half of a CRLF split across chunks.
            self._skip_lf = True
        return events

    def _consume_line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        self._block_open = True
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry" and _DIGITS.fullmatch(value):
            self._retry = int(value)
        # any other field name is ignored, as the spec says

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._has_data:
            events.append(
                SSEEvent(
                    data="\n".join(self._data),
                    event=self._event or None,
                    id=self._last_id or None,
                    retry=self._retry,
                )
            )
        self._data = []
        self._has_data = False
        self._event = ""
        self._retry = None
        self._block_open = False


def encode_event(event: SSEEvent) -> bytes:
    """Serialize one event so that `SSEDecoder` gives it back.

    `data` may hold "\\n" (one `data:` line each) but not CR, which the format cannot
    carry; `event` and `id` may hold neither, nor may `id` hold NUL. An empty `event` is
    written as no `event` field (both mean the default type). Raises ValueError otherwise.
    """
    if "\r" in event.data:
        raise ValueError("SSE data cannot carry a CR character")
    lines: list[str] = []
    if event.event:
        if "\r" in event.event or "\n" in event.event:
            raise ValueError("SSE event type cannot carry a line break")
        lines.append(f"event: {event.event}")
    if event.id is not None:
        if "\r" in event.id or "\n" in event.id or "\x00" in event.id:
            raise ValueError("SSE id cannot carry a line break or NUL")
        lines.append(f"id: {event.id}")
    if event.retry is not None:
        if event.retry < 0:
            raise ValueError("SSE retry must be a non-negative integer")
        lines.append(f"retry: {event.retry}")
    lines.extend(f"data: {line}" for line in event.data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")

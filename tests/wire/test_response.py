"""Reading a recorded response: content decoding, streamed or not, and the terminal fact."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from roller.wire import codec_for
from roller.wire.response import decode_content, header, read_response

ANTHROPIC = codec_for("anthropic-messages")
WHOLE = json.dumps(
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
    }
).encode()
JSON = [["Content-Type", "application/json"]]


def _deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        (None, lambda b: b),
        ("identity", lambda b: b),
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("GZIP ", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", _deflate_raw),
    ],
)
def test_content_codings_the_proxy_lets_through_decode(
    encoding: str | None, encode: object
) -> None:
    raw = encode(WHOLE)  # type: ignore[operator]
    assert decode_content(raw, encoding) == (WHOLE, None)
    headers = [*JSON, ["content-encoding", encoding]] if encoding else JSON
    reading = read_response(ANTHROPIC, 200, headers, raw)
    assert reading.body == WHOLE and reading.decode_error is None
    assert reading.terminal is True and not reading.streamed


@pytest.mark.parametrize(
    ("raw", "encoding", "error"),
    [(b"\x1b\x00", "br", "not decodable"), (b"not gzip", "gzip", "cannot decode gzip")],
)
def test_a_body_that_does_not_decode_is_kept_and_not_read(
    raw: bytes, encoding: str, error: str
) -> None:
    reading = read_response(ANTHROPIC, 200, [*JSON, ["content-encoding", encoding]], raw)
    assert reading.decode_error is not None and error in reading.decode_error
    assert reading.body == raw and reading.reassembly is None and reading.terminal is None


def test_terminal_is_none_false_or_true() -> None:
    stream = [["content-type", "text/event-stream; charset=utf-8"]]
    started = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
    cut = read_response(ANTHROPIC, 200, stream, started)
    assert cut.streamed and cut.terminal is False
    error = read_response(ANTHROPIC, 529, JSON, b'{"type":"error","error":{"type":"x"}}')
    assert error.terminal is False and error.reassembly is not None
    assert read_response(None, 200, JSON, WHOLE).terminal is None  # no codec: a side request
    assert read_response(ANTHROPIC, None, [], b"").terminal is None  # no response head


def test_header_lookup() -> None:
    assert header([["A", "1"], ["a", "2"]], "a") == "1"
    assert header([["only-name"]], "only-name") is None
    assert header([], "a") is None

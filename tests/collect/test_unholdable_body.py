"""Text a record cannot hold, through `roller collect`: a request body Python reads as
JSON but with a lone surrogate escape, a header value that is not UTF-8, a response with
a lone surrogate escape. Each used to raise out of finalize (a traceback, the capture
lost); now the capture is published, validates, says what was wrong where, is partial so
raw/ keeps the exact bytes on the tape."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.captures import roller

from roller.capture.reader import read_attempt
from roller.capture.tape import read_tape

BODY = b'{"model":"mock-model","max_tokens":8,"messages":[{"role":"user","content":"a \\ud800 b"}]}'
PLAIN = b'{"model":"mock-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'
REPLY = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"mock-model","content":'
    b'[{"type":"text","text":"x \\ud800 y"}],"stop_reason":"end_turn",'
    b'"usage":{"input_tokens":3,"output_tokens":2}}'
)


def _program(body: bytes, header: str = "") -> str:
    extra = f', "x-weird": {header!r}' if header else ""
    return f"""
import os, urllib.request
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages", data={body!r},
    headers={{"content-type": "application/json", "anthropic-version": "2023-06-01"{extra}}})
urllib.request.urlopen(request).read()
"""


class _Upstream(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _collect(tmp_path: Path, api_base: str, program: str) -> Path:
    run_dir = tmp_path / "run"
    proc = roller(
        "collect", "--harness", "generic", "--single-agent", "--api-base", api_base,
        "--run-dir", str(run_dir), "--", sys.executable, "-c", program,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # a partial capture, as documented: not a crash
    (attempt,) = run_dir.glob("samples/*/capture/attempt-*")
    assert roller("validate", str(attempt)).returncode == 0
    return attempt


def test_a_body_with_a_lone_surrogate_is_context_not_json(tmp_path: Path) -> None:
    attempt = _collect(tmp_path, "mock:plain", _program(BODY))
    (call,) = read_attempt(attempt).calls
    assert call.context is None
    assert [e.code for e in call.errors] == ["context_not_json"]
    (exchange,) = read_tape(attempt / "raw" / "tape").exchanges  # raw/ kept (on-error)
    assert exchange.request_body == BODY


def test_a_header_that_is_not_utf8_is_shown_replaced_and_kept_exact(tmp_path: Path) -> None:
    attempt = _collect(tmp_path, "mock:plain", _program(PLAIN, "caf\xe9 \xff"))
    capture = read_attempt(attempt)
    (call,) = capture.calls
    assert ("x-weird", "caf\ufffd \ufffd") in [(k.lower(), v) for k, v in call.request.headers]
    assert [e.code for e in call.errors] == ["text_not_unicode"]
    assert "request headers" in call.errors[0].message
    assert [e.code for e in capture.manifest.capture_errors] == ["text_not_unicode"]
    assert capture.manifest.capture_status == "partial"
    (exchange,) = read_tape(attempt / "raw" / "tape").exchanges
    weird = [v for k, v in exchange.request.headers if k.lower() == "x-weird"]
    assert [v.encode("utf-8", "surrogateescape") for v in weird] == [b"caf\xe9 \xff"]


def test_a_response_with_a_lone_surrogate_is_shown_replaced(tmp_path: Path, upstream: str) -> None:
    attempt = _collect(tmp_path, upstream, _program(PLAIN))
    (call,) = read_attempt(attempt).calls
    assert call.output is not None
    assert call.output["content"] == [{"type": "text", "text": "x \ufffd y"}]
    assert [e.code for e in call.errors] == ["text_not_unicode"]
    assert "response body" in call.errors[0].message
    (exchange,) = read_tape(attempt / "raw" / "tape").exchanges
    assert exchange.body == REPLY

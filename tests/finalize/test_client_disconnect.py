"""A client that hangs up after the whole response reached it did not interrupt the call.

Codex 0.171.0 drops a finished Responses stream without reading the chunked terminator,
so now and then the proxy records `client_disconnected` for a response the client had
in full (tests/data/harnesses/codex/v2-fork-client-left/ is such a run). The call is
`completed` only when every upstream byte was relayed to the client and the stream
reached its terminal event; anything less stays `interrupted` / `partial`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.tapes import inputs, new_tape

from roller.capture.tape import read_tape
from roller.finalize.pipeline import build_capture

DATA = Path(__file__).parents[1] / "data" / "harnesses" / "codex" / "v2-fork-client-left"
BODY = {"model": "mock-model", "stream": True, "input": "hi"}


def _real_stream() -> bytes:
    """The response bytes of the exchange the proxy saw the client leave."""
    (left,) = [ex for ex in read_tape(DATA / "tape").exchanges if ex.outcome != "ok"]
    assert left.outcome == "client_disconnected"
    return left.body


def _call(tmp_path: Path, body: bytes, end: dict[str, Any]) -> Any:
    with new_tape(tmp_path / "tape") as tape:
        xid = tape.begin()
        tape.request(
            xid,
            {
                "method": "POST",
                "path": "/v1/responses",
                "query": [],
                "headers": [["content-type", "application/json"]],
                "redacted": {"headers": [], "query": []},
                "roller": {},
                "upstream": "http://127.0.0.1:1",
            },
        )
        tape.request_body(xid, b'{"model": "mock-model", "stream": true, "input": "hi"}')
        tape.response(
            xid, {"status": 200, "reason": "OK", "headers": [["content-type", "text/event-stream"]]}
        )
        tape.chunk(xid, body)
        tape.end(xid, end)
    (call,) = build_capture(inputs("generic"), read_tape(tmp_path / "tape"), None).calls
    return call


def _left(body: bytes, client_bytes: int | None = None) -> dict[str, Any]:
    return {
        "outcome": "client_disconnected",
        "error": {"code": "client_disconnected", "message": "the client closed the connection"},
        "client_status": 200,
        "response_bytes": len(body),
        "client_bytes": len(body) if client_bytes is None else client_bytes,
    }


def test_left_after_the_terminal_event_with_every_byte_is_completed(tmp_path: Path) -> None:
    body = _real_stream()
    assert b"response.completed" in body.rsplit(b"event:", 1)[-1]  # the last event
    call = _call(tmp_path, body, _left(body))
    assert (call.execution_status, call.response_capture_status) == ("completed", "complete")
    assert call.response.outcome == "client_disconnected"  # the record still says what happened
    assert call.output_complete and call.response_id is not None


def test_left_before_the_terminal_event_is_interrupted(tmp_path: Path) -> None:
    body = _real_stream()
    cut = body[: body.rindex(b"event: response.completed")]
    call = _call(tmp_path, cut, _left(cut))
    assert (call.execution_status, call.response_capture_status) == ("interrupted", "partial")
    assert call.export_status == "blocked"


@pytest.mark.parametrize("missing", [1, 100])
def test_bytes_the_client_never_got_keep_it_interrupted(tmp_path: Path, missing: int) -> None:
    body = _real_stream()
    call = _call(tmp_path, body, _left(body, client_bytes=len(body) - missing))
    assert (call.execution_status, call.response_capture_status) == ("interrupted", "partial")

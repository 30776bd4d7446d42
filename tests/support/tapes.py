"""Writing small tapes by hand for finalize tests (real TapeWriter, real reader)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roller.capture.models import AttemptInputs, HarnessInfo
from roller.capture.tape import TapeWriter


def anthropic_reply(msg_id: str, text: str = "done", model: str = "mock-model") -> bytes:
    return json.dumps(
        {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
    ).encode()


def write_exchange(
    tape: TapeWriter,
    headers: list[tuple[str, str]],
    body: dict[str, Any],
    reply: bytes,
    *,
    path: str = "/v1/messages",
    status: int = 200,
    roller: dict[str, str] | None = None,
    t: int | None = None,
) -> str:
    xid = tape.begin()
    tape.request(
        xid,
        {
            "method": "POST",
            "path": path,
            "query": [],
            "headers": [list(h) for h in headers],
            "redacted": {"headers": [], "query": []},
            "roller": roller or {},
            "upstream": "http://127.0.0.1:1",
        },
        t=t,
    )
    tape.request_body(xid, json.dumps(body).encode())
    tape.response(
        xid, {"status": status, "reason": "OK", "headers": [["content-type", "application/json"]]}
    )
    tape.chunk(xid, reply)
    tape.end(xid, {"outcome": "ok", "error": None})
    return xid


def inputs(harness: str = "generic", retention: str = "full") -> AttemptInputs:
    return AttemptInputs(
        schema_="roller.attempt/v1",
        capture_scope="0123456789ab",
        sample_id="s1",
        attempt=1,
        harness=HarnessInfo(name=harness, version=None, profile=None),
        debug_retention=retention,  # type: ignore[arg-type]
        started_at="2026-11-29T00:00:00.000000Z",
        ended_at="2026-11-29T00:00:01.000000Z",
        exit_code=0,
        timed_out=False,
        launch_error=None,
    )


def new_tape(directory: Path) -> TapeWriter:
    return TapeWriter(directory, fsync_interval=None)

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


def conversations_tape(
    directory: Path,
    conversations: int,
    turns: int,
    *,
    interleaved: bool = False,
    misshapen: int | None = None,
) -> None:
    """A tape of `conversations` Anthropic conversations of `turns` calls each, every
    request resending its whole transcript (each turn adds a tool call and its result),
    one after another or taking turns (`interleaved`); half the bodies compact (the
    record's own bytes), half not. Call `misshapen` (in tape order) has a request meta
    key of the wrong shape (`query`)."""
    histories: list[list[dict[str, Any]]] = [
        [{"role": "user", "content": "go"}] for _ in range(conversations)
    ]
    order = (
        [(n % conversations, n // conversations) for n in range(conversations * turns)]
        if interleaved
        else [(conv, turn) for conv in range(conversations) for turn in range(turns)]
    )
    with new_tape(directory) as tape:
        for n, (conv, turn) in enumerate(order):
            tool = f"toolu_{conv}_{turn}"
            body = {"model": "mock-model", "max_tokens": 8, "messages": histories[conv]}
            reply = {
                "id": f"msg_{conv}_{turn}",
                "type": "message",
                "role": "assistant",
                "model": "mock-model",
                "content": [{"type": "tool_use", "id": tool, "name": "Read", "input": {}}],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            xid = tape.begin()
            meta = {
                "method": "POST",
                "path": "/v1/messages",
                "query": "not a list" if n == misshapen else [],
                "headers": [["content-type", "application/json"]],
                "redacted": {"headers": [], "query": []},
                "roller": {"x-roller-session-id": f"s{conv}"},
                "upstream": "http://127.0.0.1:1",
            }
            text = json.dumps(body, separators=(",", ":") if turn % 2 else (", ", ": "))
            tape.request(xid, meta, body=text.encode())
            headers = [["content-type", "application/json"]]
            tape.response(xid, {"status": 200, "reason": "OK", "headers": headers})
            tape.chunk(xid, json.dumps(reply).encode())
            tape.end(xid, {"outcome": "ok", "error": None})
            result = {"type": "tool_result", "tool_use_id": tool, "content": "ok " * turn}
            histories[conv] = [
                *histories[conv],
                {"role": "assistant", "content": reply["content"]},
                {"role": "user", "content": [result]},
            ]

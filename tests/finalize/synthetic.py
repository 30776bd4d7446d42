"""Small synthetic inputs for the finalize stages: hand-written tapes, decoded for real.

Each exchange is written with the real `TapeWriter` and read back with `read_tape`, so a
stage test sees exactly what finalize sees; `Exchange` says what one exchange holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.tapes import anthropic_reply, new_tape

from roller.capture.tape import TapeReadResult, read_tape
from roller.finalize.decode import DecodedCall, decode_exchange

BODY: dict[str, Any] = {
    "model": "mock-model",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


@dataclass(frozen=True)
class Exchange:
    body: bytes = json.dumps(BODY).encode()
    reply: bytes = anthropic_reply("msg_0")
    path: str = "/v1/messages"
    status: int = 200
    response_headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    roller: dict[str, str] = field(default_factory=dict)  # x-roller-* identity evidence
    ended: bool = True  # False: the tape stopped while it was in flight


def tape_of(tmp_path: Path, exchanges: list[Exchange]) -> TapeReadResult:
    directory = tmp_path / "tape"
    with new_tape(directory) as tape:
        for x in exchanges:
            xid = tape.begin()
            meta = {
                "method": "POST",
                "path": x.path,
                "query": [],
                "headers": [],
                "redacted": {"headers": [], "query": []},
                "roller": x.roller,
                "upstream": "http://127.0.0.1:1",
            }
            tape.request(xid, meta, body=x.body)
            headers = [list(h) for h in x.response_headers]
            tape.response(xid, {"status": x.status, "reason": "OK", "headers": headers})
            tape.chunk(xid, x.reply)
            if x.ended:
                tape.end(xid, {"outcome": "ok", "error": None})
    return read_tape(directory)


def decoded(
    tmp_path: Path, exchanges: list[Exchange], harness: str = "generic"
) -> list[DecodedCall]:
    tape = tape_of(tmp_path, exchanges)
    return [decode_exchange(n, ex, harness) for n, ex in enumerate(tape.exchanges)]


def session(key: str) -> dict[str, str]:
    """Wire identity evidence naming participant `key` (generic harness)."""
    return {"x-roller-session-id": key}


def tool_use_reply(msg_id: str, tool_id: str) -> bytes:
    """An Anthropic output that calls one tool."""
    return json.dumps(
        {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": "mock-model",
            "content": [{"type": "tool_use", "id": tool_id, "name": "Read", "input": {}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
    ).encode()


def with_tool_result(tool_id: str) -> bytes:
    """A request whose history carries the result of tool call `tool_id`."""
    body = dict(BODY)
    body["messages"] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": "Read", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}],
        },
    ]
    return json.dumps(body).encode()

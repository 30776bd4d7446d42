"""Tool results as the HTML viewer shows them under the tool call that asked for them.

A tool call's result is the content of the first `tool` message, in sequence order, of a
call's input (its OpenAI chat form, `Codec.chat`) that carries the tool call's id: the
input of a later call than the one whose output made the call. The page writes each call
with its tool calls' results, so every result is found in a pass over the calls before
the page is written; a conversation resends its transcript each turn, so the results
add up to the capture's unique content. They are kept in an anonymous temporary file,
each as JSON at an offset, and only the offsets are held: memory grows with the number
of tool calls by an entry each, not by their results.
"""

from __future__ import annotations

import json
import tempfile
from types import TracebackType
from typing import Any

from roller.capture.models import CallRecord
from roller.wire import codec_named


class Answers:
    """Tool-call id -> (the call whose input carried its result, the result)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close / __exit__)
        self._at: dict[str, tuple[str, int, int]] = {}  # id -> (call id, offset, length)
        self._end = 0

    def add(self, call: CallRecord) -> None:
        """The results `call`'s input carries that no earlier call's input did."""
        codec = codec_named(call.protocol)
        view = codec.chat.request(call.context) if codec else None
        for message in view.plain() if view else []:
            tool_id = message.get("tool_call_id")
            if message.get("role") != "tool" or not isinstance(tool_id, str) or tool_id in self._at:
                continue
            # ASCII JSON: a lone surrogate a request carried survives the round trip.
            data = json.dumps(message.get("content")).encode("ascii")
            self._file.seek(self._end)
            self._file.write(data)
            self._at[tool_id] = (call.call_id, self._end, len(data))
            self._end += len(data)

    def get(self, tool_id: str) -> tuple[str, Any] | None:
        found = self._at.get(tool_id)
        if found is None:
            return None
        call_id, offset, length = found
        self._file.seek(offset)
        return call_id, json.loads(self._file.read(length))

    def clear(self) -> None:
        """Forget every result (the file is written over)."""
        self._at.clear()
        self._end = 0
        self._file.truncate(0)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Answers:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

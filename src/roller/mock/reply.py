"""What the mock model says: a resolved reply, before any protocol encodes it.

Rules kept here:
- A reply is text, tool calls, or both (text first, as the real APIs order them); several
  tool calls in one reply are parallel calls. A call with `via` is a code-mode nested
  call: the dialect makes it from inside one `exec` script; `lookups` asks for the
  declarations of deferred code-mode namespaces (`roller.mock.code_mode`).
- Arguments are concrete JSON objects here; each protocol serializes them its own way.
- Token counts are estimates (about four characters a token) so every protocol can report
  a plausible, deterministic `usage`; nothing may treat them as real counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_CHARS_PER_TOKEN = 4
# Streamed text and tool arguments go out in pieces of this many characters, so a stream
# has several delta events the way a real one does.
CHUNK_CHARS = 16


@dataclass(frozen=True, slots=True)
class ToolCallOut:
    name: str
    arguments: dict[str, Any]
    namespace: str | None = None
    via: str | None = None
    call_type: str | None = None  # a dedicated output item (`OfferedTool.call_type`)

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCallOut, ...] = ()
    lookups: tuple[str, ...] = ()

    @property
    def output_chars(self) -> int:
        return len(self.text) + sum(len(c.name) + len(c.arguments_json) for c in self.tool_calls)

    def summary(self) -> str:
        """One line for logs: the text, or the tool names called."""
        if self.lookups:
            return "lookup " + ",".join(self.lookups)
        if self.tool_calls:
            return "tool_calls " + ",".join(c.name for c in self.tool_calls)
        return "text " + json.dumps(self.text[:60], ensure_ascii=False)


def estimate_tokens(chars: int) -> int:
    return max(1, -(-chars // _CHARS_PER_TOKEN))


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """`text` cut into pieces of at most `size` characters (one piece for "")."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]

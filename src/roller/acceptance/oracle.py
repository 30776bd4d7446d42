"""The test oracle: which agent the mock scenario meant each request to come from.

The mock scenarios give every child a prompt that starts with a marker the mock itself
chose, `ROLLER-SUBTASK depth=N id=X`, and a child's own replies never contain it. The
user-authored text of a child's request therefore names its place in the tree; a root
request has no marker there. The deepest marker wins, exactly as the mock's own rules
are ordered: a nested or warm-forked child's context may also carry its ancestors'
history. User-authored text is every user message (Codex's first one is its
`<environment_context>`, the task comes after) and Codex v2 `agent_message` items,
whose task part is `encrypted_content` (plaintext when the provider is not OpenAI).
A user text a harness wrote itself quoting a child's task back (OpenClaw's announce
block: `roller.mock.roles.quotes_a_task`) is not user-authored, exactly as the mock
reads it.
This is how the acceptance suite knows the RIGHT answer to compare roller's attribution
with. It is test knowledge about our own mock, never
used by roller to attribute anything (roller attributes from native evidence only), and
it is only applied to runs against the mock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from roller.mock.roles import quotes_a_task

_MARKER = re.compile(r"ROLLER-SUBTASK depth=(?P<depth>\d+) id=(?P<id>[A-Za-z0-9_.]+)")
_MESSAGE_LISTS = ("messages", "input", "contents")


@dataclass(frozen=True)
class Label:
    """Where a request sits in the scenario's tree: the root, or child `id` at `depth`."""

    depth: int
    id: str

    @property
    def is_root(self) -> bool:
        return self.depth == 0

    @property
    def parent(self) -> Label | None:
        """`a.b` at depth 2 is the child of `a` at depth 1; depth 1 is the root's."""
        if self.depth == 0:
            return None
        if self.depth == 1:
            return ROOT
        return Label(self.depth - 1, self.id.rsplit(".", 1)[0])

    def __str__(self) -> str:
        return "root" if self.is_root else f"depth={self.depth} id={self.id}"


ROOT = Label(0, "")


def _texts(value: Any) -> list[str]:
    """Every `text` string inside a message's content, whatever the protocol's shape."""
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    if isinstance(value, list):
        for item in value:
            out += _texts(item)
    elif isinstance(value, dict):
        for key in ("text", "content", "parts"):
            if key in value:
                out += _texts(value[key])
    return out


def first_user_text(context: Any) -> str | None:
    """The text of the first user message of a request body (any roller protocol)."""
    if not isinstance(context, dict):
        return None
    for key in _MESSAGE_LISTS:
        messages = context.get(key)
        if isinstance(messages, str) and key == "input":
            return messages
        if not isinstance(messages, list):
            continue
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                return "\n".join(_texts(message.get("content", message.get("parts"))))
    return None


def user_texts(context: Any) -> list[str] | None:
    """Every user-authored text of a request body, or None when it has no user message."""
    if not isinstance(context, dict):
        return None
    found: list[str] | None = None
    for key in _MESSAGE_LISTS:
        messages = context.get(key)
        if isinstance(messages, str) and key == "input":
            return [messages]
        if not isinstance(messages, list):
            continue
        for message in messages:
            if not isinstance(message, dict):
                continue
            if message.get("role") == "user":
                found = [*(found or []), *_texts(message.get("content", message.get("parts")))]
            elif message.get("type") == "agent_message":
                parts = message.get("content")
                found = [
                    *(found or []),
                    *(
                        str(part.get("text", part.get("encrypted_content", "")))
                        for part in (parts if isinstance(parts, list) else [])
                        if isinstance(part, dict)
                    ),
                ]
    return found


def label_of(context: Any) -> Label | None:
    """The request's place in the tree, or None when it has no user message at all."""
    texts = user_texts(context)
    if texts is None:
        return None
    labels = [
        Label(int(m["depth"]), m["id"])
        for text in texts
        if not quotes_a_task(text)
        for m in _MARKER.finditer(text)
    ]
    return max(labels, key=lambda label: label.depth, default=ROOT)

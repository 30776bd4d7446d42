"""One root agent, two clean calls: the smallest capture that is complete and exportable."""

from __future__ import annotations

import anthropic

client = anthropic.Anthropic(default_headers={"x-roller-session-id": "single-1"})
for text in ("hello", "again"):
    client.messages.create(
        model="mock-model", max_tokens=64, messages=[{"role": "user", "content": text}]
    )

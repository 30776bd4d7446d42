"""A root agent that makes one call, says so on stdout, then waits to be stopped."""

from __future__ import annotations

import sys
import time

import anthropic

client = anthropic.Anthropic(default_headers={"x-roller-session-id": "slow-1"})
client.messages.create(
    model="mock-model", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
)
print("called", flush=True)
time.sleep(600)
sys.exit(0)

"""A plain program for the collection-run tests, using the official SDKs against whatever
`ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` roller gives it; the task's prompt arrives as
`ROLLER_PROMPT`.

Modes (argv[1]):
- `plain` (default): two Anthropic Messages calls, no identity headers;
- `sdks`: three calls, one per SDK surface — Anthropic Messages, OpenAI Chat
  Completions, OpenAI Responses — no identity headers;
- `delegate`: a root call and a child call, declared with roller's x-roller-* headers;
- `delegate-slow`: the same, 3 s apart (time for a test to kill the node it runs on);
- `fail`: one call, then exit status 3.
"""

from __future__ import annotations

import os
import sys
import time

import anthropic
import openai

PROMPT = os.environ.get("ROLLER_PROMPT", "hello")
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"


def ask(client: anthropic.Anthropic) -> None:
    client.messages.create(
        model="mock-model", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
    )


if MODE == "sdks":
    ask(anthropic.Anthropic())
    chat = openai.OpenAI()
    chat.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": PROMPT}])
    chat.responses.create(model="mock-model", input=PROMPT)
elif MODE in ("delegate", "delegate-slow"):
    session = {"x-roller-session-id": "delegating-1"}
    ask(anthropic.Anthropic(default_headers=session))
    if MODE == "delegate-slow":
        time.sleep(3)
    ask(anthropic.Anthropic(default_headers={**session, "x-roller-agent-id": "helper-1"}))
elif MODE == "fail":
    ask(anthropic.Anthropic())
    sys.exit(3)
else:
    for _ in range(2):
        ask(anthropic.Anthropic())

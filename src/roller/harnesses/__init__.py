"""Harness adapters. Adding a harness touches its module, one line in `HARNESSES`, its
test file and `tests/data/harnesses/<name>/` (see docs/architecture.md)."""

from __future__ import annotations

from roller.errors import UsageError
from roller.harnesses.base import HarnessAdapter
from roller.harnesses.claude_code import ClaudeCodeAdapter
from roller.harnesses.codex import CodexAdapter
from roller.harnesses.gemini_cli import GeminiCliAdapter
from roller.harnesses.generic import GenericAdapter
from roller.harnesses.opencode import OpenCodeAdapter
from roller.harnesses.pi import PiAdapter

HARNESSES: tuple[HarnessAdapter, ...] = (
    GenericAdapter(),
    ClaudeCodeAdapter(),
    OpenCodeAdapter(),
    GeminiCliAdapter(),
    PiAdapter(),
    CodexAdapter(),
)


def adapter_for(name: str) -> HarnessAdapter:
    for adapter in HARNESSES:
        if adapter.name == name:
            return adapter
    known = ", ".join(a.name for a in HARNESSES)
    raise UsageError(f"unknown harness {name!r} (known: {known})")

"""The names of the harnesses whose wire identity roller knows.

A harness name is declared by whoever configured the run or the gateway credential, never
sniffed from the request (a user-agent is as forgeable as any header). The identity rules
key off this declared name only; an undeclared or unknown name is treated like `generic`:
only roller's own explicit headers are read.
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

HarnessName = Literal[
    "claude-code",
    "opencode",
    "codex",
    "gemini-cli",
    "pi",
    "deepseek",
    "hermes",
    "openclaw",
    "qwen-code",
    "generic",
]

HARNESS_NAMES: Final[tuple[HarnessName, ...]] = get_args(HarnessName)


def is_harness_name(value: object) -> TypeGuard[HarnessName]:
    """Whether `value` is one of the known harness names (exact, case-sensitive)."""
    return isinstance(value, str) and value in HARNESS_NAMES

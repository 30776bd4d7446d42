"""Small inline scenarios for protocol tests."""

from __future__ import annotations

from roller.mock import Scenario, parse_scenario

LONG_TEXT = "The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun."


def text_scenario(text: str = LONG_TEXT, **top: object) -> Scenario:
    head = "".join(
        f"{k} = {v!r}\n" if isinstance(v, int) else f'{k} = "{v}"\n' for k, v in top.items()
    )
    return parse_scenario(f'{head}[[rules]]\nname = "say"\ntext = "{text}"\n', "inline")


def calls_scenario() -> Scenario:
    """Two parallel shell calls, each with long-ish arguments, then text after results."""
    return parse_scenario(
        """
models = ["mock-model", "claude-mock"]
[[rules]]
name = "after"
last_message_role = "tool"
text = "finished"
[[rules]]
name = "two calls"
text = "Running both."
tool_calls = [
    { role = "shell", command = "echo first-command-with-a-long-argument" },
    { role = "shell", command = "echo second" },
]
""",
        "inline",
    )

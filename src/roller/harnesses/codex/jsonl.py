"""Codex's log files as read from `raw/native/`: UTF-8 text, one JSON value a line.

Rollouts (`.rollout`) and rollout traces (`.trace`) share the form. Pure readers that
record what they cannot read as problems and go on: `unreadable_file` (a file that
cannot be read or decoded), `not_json` (a line, named `file:line`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem


def read_text(path: Path, rel: str, problems: list[NativeProblem]) -> str | None:
    """A copied log file's text (UTF-8), or None with an `unreadable_file` problem."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(NativeProblem("unreadable_file", f"unreadable ({exc})", rel))
        return None


def json_lines(text: str, rel: str, problems: list[NativeProblem]) -> list[tuple[int, Any]]:
    """`(line number, value)` of each non-blank line (Codex's logs are JSON lines); a
    line that is not JSON is a `not_json` problem naming `rel:line`."""
    out: list[tuple[int, Any]] = []
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            out.append((number, json.loads(raw)))
        except json.JSONDecodeError as exc:
            problems.append(NativeProblem("not_json", f"not JSON ({exc.msg})", f"{rel}:{number}"))
    return out

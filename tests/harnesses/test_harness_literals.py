"""Outside its own package (and the registry), no source file names a specific harness.

A harness-specific fact written as a string literal elsewhere (`if harness == "pi"`, a
header name, a tool name keyed by harness) is the kind of spread the harness unit removed:
it must live in `roller/harnesses/<name>/` and reach other layers through the registry.
This test reads every module under `src/roller/` with `ast` and fails on any string
literal (f-string parts included) naming a registered harness — by its name or its
package's directory name, as a whole word (case-insensitive; `-`, `_`, `:`, `.` and
spaces delimit words, so `codex-headers`, `x-codex-turn-metadata`, `qwen-code:` and
"refused by OpenCode" all count, `gemini` and `api` do not).

Not counted, because they are documentation: docstrings, and the `description=` of a
record field (the JSON Schema's documentation, in `roller.capture`). Tests and docs are
not source.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from roller.harnesses import registry
from roller.harnesses.registry import BUILTIN

SRC = Path(__file__).resolve().parents[2] / "src" / "roller"
EXEMPT = {SRC / "harnesses" / "registry.py"} | {
    SRC / Path(*h.package.split(".")[1:]) for h in BUILTIN
}


def _words() -> re.Pattern[str]:
    names = {h.name for h in registry().harnesses} | {h.name.replace("-", "_") for h in BUILTIN}
    alternatives = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})(?![a-z0-9])", re.IGNORECASE)


def _documentation(tree: ast.AST) -> set[int]:
    """ids of the constants that are docstrings or field descriptions."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg == "description":
            ids.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant))
    return ids


def _sources() -> list[Path]:
    return [
        path
        for path in sorted(SRC.rglob("*.py"))
        if not any(path == e or e in path.parents for e in EXEMPT)
    ]


def named_harnesses(source: str, words: re.Pattern[str]) -> list[tuple[int, str]]:
    """(line, literal) for every string literal in `source` that names a harness."""
    tree = ast.parse(source)
    docs = _documentation(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and words.search(node.value)
    )


def test_no_source_file_outside_a_harness_package_names_a_harness() -> None:
    words = _words()
    found = [
        f"{path.relative_to(SRC.parent)}:{line}: {literal!r}"
        for path in _sources()
        for line, literal in named_harnesses(path.read_text(), words)
    ]
    assert found == []


def test_the_check_sees_literals_that_documentation_does_not_hide() -> None:
    source = (
        '"""Docstrings may say codex."""\n'
        'RULE = "codex-headers"\n'
        'MESSAGE = f"refused by OpenCode {1}"\n'
        'PREFIX = "qwen-code:"\n'
        'FAMILY = "gemini"\n'
        'x = Field(description="Claude Code session id, as codex names it")\n'
        'KEY = "x-api-key"\n'
    )
    assert named_harnesses(source, _words()) == [
        (2, "codex-headers"),
        (3, "refused by OpenCode "),
        (4, "qwen-code:"),
    ]
    assert len(_sources()) > 100  # the walk really covers the source tree

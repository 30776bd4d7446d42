"""Native-reader problems are coded values, and the places that list the codes agree.

The codes are declared once (`NATIVE_PROBLEM_CODES` in harnesses/native_capture.py); the table in
docs/harnesses.md and each reader's module docstring repeat them, so these tests fail
when a reader uses a code its docstring does not name, when the docs drift, or when a
declared code is used by no reader.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from roller.harnesses.base import NATIVE_PROBLEM_CODES, NativeProblem, NativeProblemCode

SRC = Path(__file__).resolve().parents[2] / "src" / "roller" / "harnesses"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "harnesses.md"
READERS = sorted(p for p in SRC.rglob("*.py") if p.name != "base.py")  # base re-exports


# native_capture.py helpers that report a problem of their own: the code their callers use
HELPERS = {"read_native_bytes": "unreadable_file"}


def _codes_used(tree: ast.Module) -> set[str]:
    """Every code a module reports: the code strings it passes as a call's first
    argument (NativeProblem or a helper's), and those of the helpers it calls."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return {
        arg.value
        for node in calls
        for arg in node.args[:1]
        if isinstance(arg, ast.Constant) and arg.value in NATIVE_PROBLEM_CODES
    } | {
        HELPERS[node.func.id]
        for node in calls
        if isinstance(node.func, ast.Name) and node.func.id in HELPERS
    }


def test_the_helpers_report_the_codes_listed_for_them() -> None:
    module = ast.parse((SRC / "native_capture.py").read_text())
    for name, code in HELPERS.items():
        (helper,) = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name]
        assert _codes_used(ast.Module(body=[helper], type_ignores=[])) == {code}


def test_the_code_literal_and_the_table_agree() -> None:
    assert set(get_args(NativeProblemCode)) == set(NATIVE_PROBLEM_CODES)


def test_docs_list_every_code_with_its_meaning() -> None:
    section = DOCS.read_text().split("## Native problems", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", section, re.MULTILINE))
    assert rows == dict(NATIVE_PROBLEM_CODES)


def test_each_reader_documents_the_codes_it_uses() -> None:
    used_anywhere: set[str] = set()
    for path in READERS:
        tree = ast.parse(path.read_text())
        used = _codes_used(tree)
        used_anywhere |= used
        doc = ast.get_docstring(tree) or ""
        missing = sorted(c for c in used if f"`{c}`" not in doc)
        assert not missing, f"{path.relative_to(SRC)} uses {missing} but its docstring omits them"
    assert used_anywhere == set(NATIVE_PROBLEM_CODES), "a declared code no reader uses"


def test_the_rendered_text_is_where_then_message() -> None:
    assert str(NativeProblem("not_json", "not JSON", "chats/a.jsonl:3")) == (
        "chats/a.jsonl:3: not JSON"
    )
    assert str(NativeProblem("unexpected_count", "expected one session file, found 0")) == (
        "expected one session file, found 0"
    )

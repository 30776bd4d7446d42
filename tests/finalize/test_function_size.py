"""No function in roller.finalize is longer than a screen: 80 lines, decorators to the
last line of the body (docstring and comments included). A stage that grows past it
splits into named steps instead."""

from __future__ import annotations

import ast
from pathlib import Path

import roller.finalize

LIMIT = 80
PACKAGE = Path(roller.finalize.__file__).parent


def test_no_finalize_function_is_over_the_limit() -> None:
    sources = sorted(PACKAGE.glob("*.py"))
    assert len(sources) >= 10  # the stages and their helpers are all walked
    too_long = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > LIMIT:
                    too_long.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    assert not too_long, too_long

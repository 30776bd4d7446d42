"""Harness-private request body fields that training exports leave out.

Some harnesses put bulky fields of their own into every model request body, next to the
conversation: they are not model input a trainer wants (the provider ignores them) and
can outweigh it. The capture keeps them — the request is recorded exactly as sent — but
the training exports (`openai-messages`, `parquet`, ATIF) leave them out and say so.
Each harness declares its own in its package (`Harness.private_fields`, field -> why;
`docs/exports.md` lists them); only the capture's declared harness's fields are removed,
as injection wrappers are recognised only for the harness that uses them.
"""

from __future__ import annotations

from typing import Any

from roller.harnesses import registry


def strip_private(body: Any, harness: str) -> tuple[Any, tuple[str, ...]]:
    """The body without the declared harness's private fields, and the names of those it
    had."""
    declared = registry().get(harness)
    fields = declared.private_fields if declared is not None else {}
    if not isinstance(body, dict):
        return body, ()
    found = tuple(name for name in fields if name in body)
    if not found:
        return body, ()
    return {k: v for k, v in body.items() if k not in fields}, found

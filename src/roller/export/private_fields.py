"""Harness-private request body fields that training exports leave out.

Some harnesses put bulky fields of their own into every model request body, next to the
conversation: they are not model input a trainer wants (the provider ignores them) and
can outweigh it. The capture keeps them — the request is recorded exactly as sent — but
the training exports (`openai-messages`, `parquet`, ATIF) leave them out and say so.
The table is the one place they are named (`docs/exports.md`).
"""

from __future__ import annotations

from typing import Any

# body field -> why it is left out
PRIVATE_BODY_FIELDS: dict[str, str] = {
    "dsh_session_log": "DeepSeek Harness: the slice of its native event log each request "
    "carries (lineage evidence, resent at least once; ~26 KB of a 55 KB request)",
    "dsh_plugin_packages": "DeepSeek Harness: the package@version list of its plugins",
}


def strip_private(body: Any) -> tuple[Any, tuple[str, ...]]:
    """The body without harness-private fields, and the names of those it had."""
    if not isinstance(body, dict):
        return body, ()
    found = tuple(name for name in PRIVATE_BODY_FIELDS if name in body)
    if not found:
        return body, ()
    return {k: v for k, v in body.items() if k not in PRIVATE_BODY_FIELDS}, found

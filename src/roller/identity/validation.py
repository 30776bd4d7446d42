"""Validation of identity values taken from the wire: what may become a key.

Every id a request carries is attacker-controlled text until proven otherwise: a harness,
a misconfigured proxy or a hostile client can send anything in a header or body field.
This module owns the one rule that decides whether such a value may become part of a
session, participant or parent key, and the reasons it gives when it may not.

Rules kept here:
- An id is a `str` matching `^[A-Za-z0-9_.:\\-]+$` in full, at most `MAX_ID_LENGTH` (200)
  characters. This is the rule Preloop's gateway applies to client session ids, so every
  id the probed harnesses send (uuids, `ses_…`, `a` + 16 hex, `session-<uuid>`) passes as is.
- Nothing is stripped or normalised silently. HTTP parsers already drop optional
  whitespace around a field value, so a value that still has a blank around it did not
  come from a well-behaved client: it is rejected, never trimmed into something else.
- Tighter than the regex alone: a value made only of dots (`.`, `..`) is rejected, because
  a key may end up in a path or a URL segment and those two mean something there.
- An id that becomes the right-hand part of a composite key `<session>:<agent>` must not
  contain `:`. With the agent part colon-free, a composite key splits one way only (at its
  last colon), so two different (session, agent) pairs can never produce the same key.
- A composite key obeys the same rule as a plain id, length included: a pair whose join
  would exceed 200 characters yields no key at all (never a truncated one).
- A label (Codex `agent_name`, e.g. `/root` or `<home>`) is never a key; it is kept as
  evidence when it is a printable string of at most 200 characters.
"""

from __future__ import annotations

import re
from typing import Final

MAX_ID_LENGTH: Final = 200
ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_.:\-]+")

# Reasons are fixed strings (never echo the value: it may be hostile or huge).
REASON_NOT_STRING: Final = "not a string"
REASON_EMPTY: Final = "empty"
REASON_TOO_LONG: Final = f"longer than {MAX_ID_LENGTH} characters"
REASON_BAD_CHARS: Final = "invalid characters"
REASON_DOTS_ONLY: Final = "only dots"
REASON_COLON_IN_AGENT: Final = "':' not allowed in an agent id (composite key must split one way)"
REASON_COMPOSITE_TOO_LONG: Final = f"composite key longer than {MAX_ID_LENGTH} characters"
REASON_NOT_PRINTABLE: Final = "not printable"


def id_problem(value: object) -> str | None:
    """Why `value` may not be an identity id, or None when it may.

    The length check comes before the pattern so a megabyte-long header costs nothing.
    """
    if not isinstance(value, str):
        return REASON_NOT_STRING
    if not value:
        return REASON_EMPTY
    if len(value) > MAX_ID_LENGTH:
        return REASON_TOO_LONG
    if ID_PATTERN.fullmatch(value) is None:
        return REASON_BAD_CHARS
    if not value.strip("."):
        return REASON_DOTS_ONLY
    return None


def valid_id(value: object) -> str | None:
    """`value` itself when it is a valid identity id, else None. Never alters the value."""
    if id_problem(value) is None:
        assert isinstance(value, str)
        return value
    return None


def agent_id_problem(value: object) -> str | None:
    """Why `value` may not be the agent part of a composite key, or None when it may."""
    problem = id_problem(value)
    if problem is not None:
        return problem
    assert isinstance(value, str)
    if ":" in value:
        return REASON_COLON_IN_AGENT
    return None


def compose_key(session: str, agent: str) -> str | None:
    """The composite participant key `<session>:<agent>`, or None when it would be too long.

    Both parts must already be valid (`agent` colon-free); the result is then a valid id
    whenever it is returned.
    """
    key = f"{session}:{agent}"
    if len(key) > MAX_ID_LENGTH:
        return None
    return key


def label_problem(value: object) -> str | None:
    """Why `value` may not be kept as a label (evidence that is never a key), or None."""
    if not isinstance(value, str):
        return REASON_NOT_STRING
    if not value:
        return REASON_EMPTY
    if len(value) > MAX_ID_LENGTH:
        return REASON_TOO_LONG
    if not value.isprintable():
        return REASON_NOT_PRINTABLE
    return None

"""Reading identity evidence out of one request: headers, JSON-in-headers, body fields.

This module owns the raw-input side of identity: turning whatever the caller holds (a
mapping, an aiohttp multidict, the tape's list of `[name, value]` pairs, roller's record
of the `x-roller-*` headers it removed) into validated values, while writing down every
value considered (`evidence`) and every value refused with its reason (`rejected`).

Rules kept here:
- Header names are case-insensitive (lower-cased on the way in).
- A header sent more than once with the same value counts once. A header sent more than
  once with different values is ambiguous and is rejected outright: picking the first or
  the last would let whoever adds the second copy choose the identity.
- Roller's removed `x-roller-*` values (`roller=`) and any `x-roller-*` still inside the
  headers are one source: equal copies merge, different copies are ambiguous.
- Nothing here raises on hostile input: non-string names or values, huge values, JSON
  that does not parse or nests absurdly deep all become rejections.
- Evidence holds only values that passed validation; a rejection never repeats its value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from roller.identity.validation import agent_id_problem, id_problem, label_problem
from roller.identity.wire_identity import Rejection

HeaderInput = Mapping[str, str] | Iterable[Any]
"""Headers as a mapping (dict, multidict) or an iterable of `(name, value)` pairs."""
BodyPath = tuple[str, ...]
"""Object keys from the parsed body's root to one value a rule reads (`dig`'s path)."""

REASON_DUPLICATE: Final = "conflicting duplicate values"
REASON_BAD_NAME: Final = "header name is not a string"
REASON_JSON_TOO_LARGE: Final = "too large to parse"
REASON_NOT_JSON_OBJECT: Final = "not a JSON object"
MAX_JSON_HEADER: Final = 64 * 1024
# Where a rejection about a header *name* is filed (the name itself may not be text).
BAD_NAME_FIELD: Final = "(header)"


class Field(NamedTuple):
    """One identity value as read: `present` says it was sent at all; `value` is the
    validated value, or None when it was absent, ambiguous or rejected."""

    present: bool
    value: str | None

    @property
    def rejected(self) -> bool:
        return self.present and self.value is None


ABSENT: Final = Field(present=False, value=None)


def _pairs(headers: HeaderInput | None) -> Iterable[Any]:
    if headers is None:
        return ()
    if isinstance(headers, Mapping):
        # `.items()` of a multidict yields every copy of a repeated header.
        return headers.items()
    return headers


class HeaderView:
    """A case-insensitive, duplicate-aware view of a request's headers."""

    def __init__(self, headers: HeaderInput | None, roller: Mapping[str, str] | None = None):
        self._values: dict[str, list[object]] = {}
        self.problems: list[Rejection] = []
        for pair in (*_pairs(headers), *_pairs(roller)):
            self._add(pair)

    def _add(self, pair: Any) -> None:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            self.problems.append(Rejection(BAD_NAME_FIELD, "not a (name, value) pair"))
            return
        name, value = pair
        if not isinstance(name, str):
            self.problems.append(Rejection(BAD_NAME_FIELD, REASON_BAD_NAME))
            return
        values = self._values.setdefault(name.lower(), [])
        if value not in values:
            values.append(value)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def names(self) -> frozenset[str]:
        return frozenset(self._values)

    def raw(self, name: str) -> tuple[bool, object, str | None]:
        """`(present, value, problem)` for one lower-cased header name."""
        values = self._values.get(name)
        if not values:
            return False, None, None
        if len(values) > 1:
            return True, None, REASON_DUPLICATE
        return True, values[0], None


class Evidence:
    """Collects validated values and rejections while the rules read one request."""

    def __init__(self, view: HeaderView):
        self.view = view
        self.values: dict[str, str] = {}
        self.rejected: list[Rejection] = list(view.problems)

    def reject(self, field: str, reason: str) -> None:
        rejection = Rejection(field, reason)
        if rejection not in self.rejected:
            self.rejected.append(rejection)

    def check(self, field: str, value: object, *, agent: bool = False) -> Field:
        """Validate one present value as an id (`agent`: also colon-free)."""
        problem = agent_id_problem(value) if agent else id_problem(value)
        if problem is not None:
            self.reject(field, problem)
            return Field(present=True, value=None)
        assert isinstance(value, str)
        self.values[field] = value
        return Field(present=True, value=value)

    def header_id(self, name: str, *, agent: bool = False) -> Field:
        present, value, problem = self.view.raw(name)
        if not present:
            return ABSENT
        if problem is not None:
            self.reject(name, problem)
            return Field(present=True, value=None)
        return self.check(name, value, agent=agent)

    def label(self, field: str, value: object) -> str | None:
        """Keep a label (never a key) as evidence when it is printable and short."""
        problem = label_problem(value)
        if problem is not None:
            self.reject(field, problem)
            return None
        assert isinstance(value, str)
        self.values[field] = value
        return value

    def header_label(self, name: str) -> str | None:
        present, value, problem = self.view.raw(name)
        if not present:
            return None
        if problem is not None:
            self.reject(name, problem)
            return None
        return self.label(name, value)

    def header_json_object(self, name: str) -> Mapping[str, Any] | None:
        """A header whose value is a JSON object (Codex `x-codex-turn-metadata`)."""
        present, value, problem = self.view.raw(name)
        if not present:
            return None
        if problem is None and not isinstance(value, str):
            problem = "not a string"
        if problem is None and isinstance(value, str) and len(value) > MAX_JSON_HEADER:
            problem = REASON_JSON_TOO_LARGE
        if problem is not None:
            self.reject(name, problem)
            return None
        assert isinstance(value, str)
        parsed = parse_json_object(value)
        if parsed is None:
            self.reject(name, REASON_NOT_JSON_OBJECT)
        return parsed

    def agree(self, first: tuple[str, Field], second: tuple[str, Field]) -> Field:
        """One value from two sources that must say the same thing.

        Either alone is used; both valid and different is a conflict and yields nothing
        (the second source's field carries the rejection); a rejected copy on either side
        never silently hands the decision to the other.
        """
        (_, a), (b_name, b) = first, second
        if not a.present:
            return b
        if not b.present:
            return a
        if a.value is not None and b.value is not None and a.value != b.value:
            self.reject(b_name, f"conflicts with {first[0]}")
            return Field(present=True, value=None)
        if a.value is None or b.value is None:
            return Field(present=True, value=None)
        return a


def parse_json_object(text: str) -> Mapping[str, Any] | None:
    """`text` parsed as a JSON object, or None for anything else (never raises)."""
    if len(text) > MAX_JSON_HEADER:
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        # Not JSON, or nested deeper than the parser's recursion limit: either way not
        # the object the harness sends, so it is evidence of nothing.
        return None
    return parsed if isinstance(parsed, dict) else None


def dig(value: object, *path: str) -> tuple[bool, object]:
    """`(present, value)` at `path` inside nested JSON objects (never raises)."""
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return False, None
        value = value[key]
    return True, value

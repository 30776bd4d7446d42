"""What a derived identity depends on in a body: the values at the paths its rules read.

`derive(profile, headers, body, ...)` reads a body only through `dig` at the paths the
profile's rules declare (`WireProfile.body_paths`), and reads headers only by name. So
two requests under the same profile, gate and trust, whose identity-readable headers are
the same pairs and whose bodies hold the same values at those paths, get the same
`WireIdentity`: a caller may keep one per such key instead of deriving it per request
(the gateway does, `roller.gateway.identities`). Identity is never guessed: the key is
the whole evidence, compared exactly.

`body_values(paths, body)` is the body's part of that key: per path, whether it is
present and its value frozen so that equal keys mean values `derive` cannot tell apart —
each scalar tagged with its type (`1`, `1.0` and `True` compare equal in Python, not
here), a float by its `repr` (`0.0` and `-0.0`), objects and arrays in order. None when
a value is too large to be worth keeping (more than `MAX_NODES` scalars and containers)
or is not what parsed JSON holds (exact `dict`, `list`, `str`, `int`, `float`, `bool`,
None): the caller derives such a request afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from roller.identity.evidence import BodyPath, dig

MAX_NODES: Final = 64

Frozen = object


class _TooLarge(Exception):
    """The value is not kept (too large, or not parsed JSON)."""


def body_values(paths: Sequence[BodyPath], body: object) -> tuple[Frozen, ...] | None:
    """The frozen values `body` holds at `paths` (see the module docstring)."""
    budget = [MAX_NODES]
    out: list[Frozen] = []
    try:
        for path in paths:
            present, value = dig(body, *path)
            out.append(_freeze(value, budget) if present else _ABSENT)
    except _TooLarge:
        return None
    return tuple(out)


_ABSENT: Final = ("absent",)


def _freeze(value: object, budget: list[int]) -> Frozen:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is bool or kind is int:
        return (kind.__name__, value)
    if kind is float:
        return ("float", repr(value))
    if kind is dict:
        assert isinstance(value, dict)
        items = value.items()
        if not all(type(k) is str for k in value):
            raise _TooLarge
        return ("object", tuple((k, _freeze(v, budget)) for k, v in items))
    if kind is list:
        assert isinstance(value, list)
        return ("array", tuple(_freeze(v, budget) for v in value))
    # Not a value parsed JSON holds (a caller's own object, a subclass): never kept.
    raise _TooLarge

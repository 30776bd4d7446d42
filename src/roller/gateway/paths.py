"""Which request paths are the gateway's own: one canonical match for every consumer.

The gateway serves `/roller/…` itself (notes, trees) and never forwards it; the policy
refuses to forward anything in that namespace. Both ask `own_route`, which matches the
path as the endpoint table reads paths (`roller.wire.endpoints.path_segments`: split on
`/`, each segment percent-decoded, empty ones dropped) with the namespace compared
case-insensitively, so `/%72oller/notes`, `/ROLLER/notes` and `//roller/notes` are all
the gateway's, never the upstream's.
"""

from __future__ import annotations

from typing import Final

from roller.wire.endpoints import path_segments

NAMESPACE: Final = "roller"


def own_route(target: str) -> tuple[str, ...] | None:
    """The segments after the namespace when `target` (a path, with or without its query)
    is the gateway's own; None when it is model traffic."""
    if "%" not in target and NAMESPACE not in target.lower():
        return None  # the hot path (every request, twice): no split, no decoding
    path = target.split("?", 1)[0]
    first = path.lstrip("/").split("/", 1)[0]
    if "%" not in first and first.lower() != NAMESPACE:
        return None
    segments = path_segments(path)
    if not segments or segments[0].lower() != NAMESPACE:
        return None
    return segments[1:]

"""What the gateway reads of a request's headers, decided once per sequence of names.

A harness sends the same header names turn after turn; which of them can bear on the
wire identity and which carry a credential depends on the name alone. `HeaderReading`
takes both decisions once per distinct name sequence (as the proxy's
`roller.proxy.header_plan` does for its own) and applies them per request:
- `identity_headers(pairs)`: the request's pairs whose names any identity rule can read
  — the native headers of every registered harness (the gate's `owners`), install-scoped
  ids and roller's `x-roller-*` (`roller.identity.gating`) — in arrival order, copies
  kept. `roller.identity.derive` over them gives exactly the identity it gives over every
  header: a rule reads only the names its `headers()` declare, the gate rejects only
  names it owns or knows as install-scoped, and no other name adds evidence or a
  rejection (`tests/gateway/test_headers.py` compares the two on every harness).
- `credentials`: every credential-bearing header name (`Redactor.secret_header`),
  lower-cased, once each: the gateway forwards none of them;
- `token_headers(pairs)`: the headers a roller token may be in (`tokens.
  CREDENTIAL_HEADERS`), in the order `tokens.presented_in` reads them: authentication
  without a lookup per credential name.
Rules kept: the set of identity names follows the harness registry as it is now (a
harness registered later is seen); the cache is bounded (names come from clients): past
`MAX_READINGS` name sequences a reading is built for the request and not kept. The
proxy hands its own reading of the headers on (`RequestHead.pairs` and `.names`, its
header plan's key), so a request's headers are walked once, by the proxy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from multidict import CIMultiDictProxy

from roller.gateway.tokens import CREDENTIAL_HEADERS
from roller.harnesses import registry
from roller.harnesses.registry import Registry
from roller.identity.gating import ROLLER_HEADERS
from roller.proxy import Redactor, RequestHead

MAX_READINGS: Final = 1024
Pair = tuple[str, str]


def identity_names(current: Registry) -> frozenset[str]:
    """Every lower-cased header name an identity rule of `current` can read or reject."""
    gate = current.gate
    return frozenset(gate.owners) | gate.install_scoped | frozenset(ROLLER_HEADERS)


@dataclass(frozen=True, slots=True)
class Reading:
    """One name sequence's decisions."""

    identity: tuple[int, ...]  # where the pairs an identity rule can read are
    credentials: tuple[str, ...]
    # Where a roller token may be: (lower-cased name, index), in `CREDENTIAL_HEADERS`
    # order, each name's copies in arrival order (`tokens.presented_in`'s order).
    token_at: tuple[tuple[str, int], ...] = ()

    def token_headers(self, pairs: Sequence[Pair]) -> list[Pair]:
        """The headers a roller token may be in, as `tokens.presented_in` takes them."""
        return [(name, pairs[i][1]) for name, i in self.token_at]

    def identity_headers(self, pairs: Sequence[Pair]) -> tuple[Pair, ...]:
        """The pairs an identity rule can read, in arrival order."""
        return tuple(map(pairs.__getitem__, self.identity)) if self.identity else ()


class HeaderReading:
    """The readings of one gateway's requests, cached per name sequence (bounded)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._registry: Registry | None = None
        self._names: frozenset[str] = frozenset()
        self._readings: dict[tuple[str, ...], Reading] = {}

    def of(self, headers: CIMultiDictProxy[str]) -> tuple[Reading, tuple[Pair, ...]]:
        """The reading of `headers`' name sequence, and their pairs in arrival order."""
        pairs = tuple(headers.items())
        return self.of_names(tuple(name for name, _ in pairs)), pairs

    def of_head(self, head: RequestHead) -> tuple[Reading, Sequence[Pair]]:
        """`of(head.headers)`, from the pairs and names the proxy already read when it
        hands them on (`RequestHead.pairs`, `.names`): no second pass over the headers."""
        if head.names or not head.headers:
            return self.of_names(head.names), head.pairs
        return self.of(head.headers)

    def of_names(self, names: tuple[str, ...]) -> Reading:
        """The reading of one name sequence."""
        current = registry()
        if current is not self._registry:  # a harness was registered or removed
            self._registry, self._names = current, identity_names(current)
            self._readings.clear()
        reading = self._readings.get(names)
        if reading is None:
            reading = self._reading(names)
            if len(self._readings) < MAX_READINGS:
                self._readings[names] = reading
        return reading

    def _reading(self, names: tuple[str, ...]) -> Reading:
        lowered = [name.lower() for name in names]
        secret = self._redactor.secret_header
        return Reading(
            identity=tuple(i for i, n in enumerate(lowered) if n in self._names),
            credentials=tuple(dict.fromkeys(name.lower() for name in names if secret(name))),
            token_at=tuple(
                (name, i) for name in CREDENTIAL_HEADERS for i, n in enumerate(lowered) if n == name
            ),
        )

"""Every call's `CallFacts`, as finalize keeps them in memory from decode to assembly.

The facts of every call stay in memory while the bodies stay on the tape, so what they
hold per call is what bounds finalize's memory (docs/benchmarks.md, "Finalize at scale,
round 4"). Many calls carry equal values that decode made afresh from each request: the
same wire identity for every call of a participant, the same model names. `KeptFacts`
holds one object for each such value (the identity equal to the participant's previous
one, model names interned), so a call costs its facts record and what is its own
(response id, tool ids, statuses), not a copy of its participant's identity. Sharing
changes no value: the values are frozen and compared equal before one is shared.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import overload

from roller.finalize.decode import CallFacts, DecodedCall
from roller.identity import WireIdentity


def _interned(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


class KeptFacts(Sequence[CallFacts]):
    """The facts of the calls decoded so far, in arrival order (`add`)."""

    def __init__(self) -> None:
        self._facts: list[CallFacts] = []
        self._identities: dict[str | None, WireIdentity] = {}  # per participant: its last

    def add(self, call: DecodedCall) -> CallFacts:
        facts = call.facts
        identity = facts.identity
        last = self._identities.get(identity.participant_key)
        if last is not None and last == identity:
            identity = last
        else:
            self._identities[identity.participant_key] = identity
        facts = replace(
            facts,
            identity=identity,
            model=_interned(facts.model),
            response_model=_interned(facts.response_model),
        )
        self._facts.append(facts)
        return facts

    @overload
    def __getitem__(self, i: int) -> CallFacts: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[CallFacts]: ...
    def __getitem__(self, i: int | slice) -> CallFacts | Sequence[CallFacts]:
        return self._facts[i]

    def __len__(self) -> int:
        return len(self._facts)

    def __iter__(self) -> Iterator[CallFacts]:
        return iter(self._facts)

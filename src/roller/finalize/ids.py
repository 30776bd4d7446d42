"""The ids of a capture's records: calls, participants and relations.

Ids come from the attempt's capture scope and an order that is part of the recording,
never from a clock or a random source, so the same raw/ always gives the same ids:
- `call-<scope>-NNNNN`: the exchange's arrival order at the proxy (its tape sequence);
- `agent-<scope>-NN`: the order attribution lists the participants in (native order,
  or first appearance on the wire);
- `rel-<scope>-NNNNN`: the order the relate stage makes the relations in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count

from roller.capture.models.numbered import call_ids_of
from roller.finalize.attribute import ParticipantDraft
from roller.finalize.call_facts import CallFacts
from roller.finalize.kept_facts import sequences_of


@dataclass(frozen=True)
class CaptureIds:
    scope: str
    calls: Sequence[str]  # per decoded call, in sequence order (numbered: 8 bytes a call)
    participants: Mapping[str, str]  # participant key -> participant id

    def relation_ids(self, start: int = 1) -> Callable[[], str]:
        """A fresh numbering of relations, from `start`."""
        numbers, prefix = count(start), f"rel-{self.scope}-"
        return lambda: f"{prefix}{next(numbers):05d}"


def call_id(scope: str, sequence: int) -> str:
    return f"call-{scope}-{sequence:05d}"


def capture_ids(
    scope: str, calls: Sequence[CallFacts], participants: Sequence[ParticipantDraft]
) -> CaptureIds:
    return CaptureIds(
        scope=scope,
        calls=call_ids_of(call_id(scope, 0)[:-5], sequences_of(calls)),
        participants={d.key: f"agent-{scope}-{n:02d}" for n, d in enumerate(participants, 1)},
    )

"""The calls as the relate stage reads them: ids, owners, emitted tool calls and the ids
their results carry, looked up by participant, response id or run id (`CallIndex`).

Built once per finalize by `roller.finalize.relate.relate` over the decoded calls; read
by the native binding there and by the derived-relation scan
(`roller.finalize.derived.derive_in_context`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from roller.finalize.call_facts import CallFacts
from roller.finalize.kept_facts import KeptFacts, response_ids_of, shared_of
from roller.finalize.tool_ids import ToolIds
from roller.wire.types import ToolCall

Texts = Callable[[int], Sequence[str]]  # call index -> the text fragments of its request


def no_texts(i: int) -> Sequence[str]:  # a caller that looks for no notification text
    return ()


@dataclass(frozen=True)
class CallIndex:
    """Calls with their ids and owners, as relations need them.

    `texts(i)` gives call i's request text fragments on demand (only a notification's
    delivered text is looked for, so the fragments are not kept for every call)."""

    calls: Sequence[CallFacts]
    call_ids: Sequence[str]
    owners: Sequence[str | None]  # participant key per call (None when not attributed)
    participant_ids: Mapping[str, str]  # participant key -> participant id
    tool_ids: Sequence[ToolIds] = ()  # per call (`tool_refs_of`); empty: the wire's own ids
    texts: Texts = field(default=no_texts)

    @cached_property
    def _by_owner(self) -> dict[str | None, array[int]]:
        """Each owner's calls: an `array`, 8 bytes a call (a list held an int per call)."""
        out: dict[str | None, array[int]] = {}
        for i, owner in enumerate(self.owners):
            found = out.get(owner)
            if found is None:
                found = out[owner] = array("q")
            found.append(i)
        return out

    @cached_property
    def _by_response(self) -> dict[str | None, list[int]]:
        out: dict[str | None, list[int]] = {}
        for i, response_id in enumerate(response_ids_of(self.calls)):
            out.setdefault(response_id, []).append(i)
        return out

    def emitted(self, i: int) -> list[tuple[ToolCall, str | None]]:
        """Call i's emitted tool calls, each with the id its results carry."""
        calls = self.calls
        emitted = calls.emitted(i) if isinstance(calls, KeptFacts) else calls[i].emitted
        ids = self.tool_ids[i] if self.tool_ids else tuple(t.id for t in emitted)
        return list(zip(emitted, ids, strict=True))

    @cached_property
    def carrying(self) -> Callable[[Sequence[int], str], list[int]]:
        """`carrying(calls, result_id)`: those of `calls` (indices) whose context carries
        that result, in order (asked for every later call of a participant: where
        finalize keeps the facts, in one loop over its columns, without a record)."""
        calls = self.calls
        if isinstance(calls, KeptFacts):
            return calls.carrying
        return lambda later, result_id: [j for j in later if result_id in calls[j].result_ids]

    def emits(self, i: int, tool_call_id: str) -> bool:
        return any(tool_call_id in (t.ref, t.id, tid) for t, tid in self.emitted(i))

    def of_participant(self, key: str) -> list[int]:
        return list(self._by_owner.get(key, ()))

    def by_response_id(self, response_id: str) -> list[int]:
        return list(self._by_response.get(response_id, ()))

    def later_of_participant(self, key: str, i: int) -> Sequence[int]:
        """The calls of participant `key` after call i, in order."""
        own = self._by_owner.get(key, array("q"))
        return own[bisect_right(own, i) :]

    def by_run_id(self, run_id: str) -> list[int]:
        return [i for i, s in enumerate(shared_of(self.calls)) if s.identity.run_id == run_id]

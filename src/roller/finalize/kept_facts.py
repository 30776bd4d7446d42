"""Every call's `CallFacts`, as finalize keeps them in memory from decode to assembly: a
row of bytes a call, the record rebuilt when asked.

The facts of every call stay in memory while the bodies stay on the tape, so what they
hold per call is what bounds finalize's memory (docs/benchmarks.md, "Finalize at scale,
round 5"). As records they cost ~0.8 KB a call: the record, its integers, the response
and tool-call ids as strings, a `ToolCall` per emitted tool call, a tuple of the result
ids its context carries. `KeptFacts` keeps one `marshal`led row per call in one buffer
(~0.1 KB): the call's own values (request time, response id, the emitted tool calls'
fields); columns of 4-8 bytes for its sequence and the code of its `SharedFacts`, one
object for what many calls share (kind, models, statuses, errors, the wire identity:
one for a participant's equal identities); and its result ids as a prefix of its
conversation's list (`roller.finalize.result_ids`). `kept[i]` rebuilds the record (a
few µs), equal to what decode gave but for the emitted tool calls' `arguments` (no
later stage reads them; the shell took them from the `DecodedCall`).

A stage that reads a field or two of every call reads them without the record: from a
column (`sequences`, `shared`), from the row alone (`outputs`, `response_ids`,
`emitted(i)`, `response_id(i)`: ~1 µs) or from the result ids (`carrying`, asked per
pair of calls). The functions at the end (`sequences_of`, `shared_of`, `outputs_of`,
`response_ids_of`, `response_id_of`) give the same for any sequence of call facts, so
a stage reads a `KeptFacts` or the decoded calls tests hand it alike. Round 5 rebuilt
the record wherever a stage read a field (~7 times a call): part of the ~9% CPU it
cost finalize, won back in round 6 (docs/benchmarks.md).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any

from roller.capture.lazy_sequence import LazySequence
from roller.finalize.call_facts import CallFacts, SharedFacts
from roller.finalize.decode import DecodedCall
from roller.finalize.result_ids import ResultIds, ResultLists
from roller.finalize.rows import Rows
from roller.identity import WireIdentity
from roller.wire.types import ToolCall

# a row: request time, response id, the emitted tool calls' fields (id, name, item id,
# namespace, index); the sequence, the code of its `SharedFacts` and its result ids'
# list and count are columns of their own (read for every call without the row)
_Row = tuple[Any, ...]
_KEEP_SHARED = 4  # per participant, the distinct shared facts compared with
_shared_values = attrgetter(*(f.name for f in fields(SharedFacts)))  # in field order


class KeptFacts(LazySequence[CallFacts]):
    """The facts of the calls decoded so far, in arrival order (`add`)."""

    def __init__(self) -> None:
        self._rows: Rows[_Row] = Rows()
        self._sequences = array("q")  # per call: its sequence
        self._lists = array("i")  # per call: its result ids' list in `_results`
        self._counts = array("i")  # ... and how many of that list's first ids it carries
        self._shared_codes = array("i")  # per call: the code of its `SharedFacts`
        self._shared: list[SharedFacts] = []
        self._recent: dict[str | None, list[int]] = {}  # per participant: shared facts
        self._last_identity: dict[str | None, WireIdentity] = {}
        self._results = ResultLists()

    def add(self, call: DecodedCall) -> None:
        """Keep `call`'s facts (`self[len(self) - 1]` is its record, made when asked:
        finalize's first pass asks for none)."""
        self.add_values(facts_values(call))

    def add_values(self, values: FactsValues) -> None:
        """Keep the facts `facts_values` gave (of a call decoded here or in a worker
        process: plain values, pickled as they are)."""
        sequence, request_time_ns, response_id, emitted, ids, shared = values
        self._shared_codes.append(self._shared_code(shared))
        self._sequences.append(sequence)
        self._rows.append((request_time_ns, response_id, emitted))
        number, count = self._results.add(ids)
        self._lists.append(number)
        self._counts.append(count)

    def _shared_code(self, shared: tuple[Any, ...]) -> int:
        """The code of a call's shared facts (`SharedFacts`' values in field order): a
        participant's equal ones (and equal identities) are one object, compared equal
        first."""
        identity: WireIdentity = shared[3]
        key = identity.participant_key
        last = self._last_identity.get(key)
        if last is not None and last == identity:
            identity = last
        else:
            self._last_identity[key] = identity
        values = (*shared[:3], identity, *shared[4:])
        recent = self._recent.setdefault(key, [])
        for code in recent:  # compared as the dataclass compares, without making one
            if _shared_values(self._shared[code]) == values:
                return code
        self._shared.append(SharedFacts(*values))
        recent.insert(0, len(self._shared) - 1)
        del recent[_KEEP_SHARED:]
        return len(self._shared) - 1

    def result_ids(self, i: int) -> ResultIds:
        """Call i's `result_ids`, without the rest of its record."""
        return self._results.view(self._lists[i], self._counts[i])

    def carrying(self, calls: Iterable[int], result_id: str) -> list[int]:
        """Those of `calls` (indices) whose `result_ids` hold `result_id`, in order."""
        return self._results.carrying(self._lists, self._counts, calls, result_id)

    def sequences(self) -> Iterator[int]:
        """Every call's `sequence`, in order, without its record."""
        return iter(self._sequences)

    def shared(self) -> Iterator[SharedFacts]:
        """Every call's `SharedFacts`, in order, without the rest of its record."""
        return map(self._shared.__getitem__, self._shared_codes)  # no Python frame a call

    def outputs(self) -> Iterator[tuple[str | None, Sequence[ToolCall]]]:
        """Every call's `response_id` and `emitted`, in order, without its record."""
        return ((response_id, _emitted(e)) for _, response_id, e in self._rows)

    def response_ids(self) -> Iterator[str | None]:
        """Every call's `response_id`, in order, without its record."""
        return (response_id for _, response_id, _ in self._rows)

    def emitted(self, i: int) -> Sequence[ToolCall]:
        """Call i's `emitted`, without the rest of its record."""
        return _emitted(self._rows.row(i)[2])

    def response_id(self, i: int) -> str | None:
        """Call i's `response_id`, without the rest of its record."""
        response_id: str | None = self._rows.row(i)[1]
        return response_id

    def _make(self, i: int) -> CallFacts:
        time, response_id, emitted = self._rows.row(i)
        return CallFacts(
            self._sequences[i],
            time,
            response_id,
            _emitted(emitted),
            self._results.view(self._lists[i], self._counts[i]),
            self._shared[self._shared_codes[i]],
        )

    def __len__(self) -> int:
        return len(self._rows)


# What `KeptFacts` keeps of one call, as plain values: its sequence, request time,
# response id, the emitted tool calls' fields, the result ids its context carries, and
# `SharedFacts`' values in field order.
FactsValues = tuple[
    int, int, str | None, tuple[tuple[Any, ...], ...], tuple[str, ...], tuple[Any, ...]
]


def facts_values(call: DecodedCall) -> FactsValues:
    """The values `KeptFacts.add_values` keeps of `call`."""
    return (
        call.sequence,
        call.request_time_ns,
        call.response_id,
        tuple((t.id, t.name, t.item_id, t.namespace, t.index) for t in call.emitted),
        tuple(dict.fromkeys(r.id for r in call.results if r.id is not None)),
        (
            call.kind,
            call.model,
            call.response_model,
            call.identity,
            call.context_ok,
            call.output_complete,
            call.tool_call_without_identity,
            call.execution_status,
            call.response_capture_status,
            call.errors,
        ),
    )


def _emitted(fields: tuple[tuple[Any, ...], ...]) -> Sequence[ToolCall]:
    return _ToolCalls(fields) if fields else ()


class _ToolCalls(LazySequence[ToolCall]):
    """A call's emitted tool calls, each made when asked (most stages never read them):
    equal to the tuple of them."""

    __slots__ = ("_fields",)

    def __init__(self, fields: tuple[tuple[Any, ...], ...]) -> None:
        self._fields = fields

    def __len__(self) -> int:
        return len(self._fields)

    def _make(self, i: int) -> ToolCall:
        x, name, item, ns, k = self._fields[i]
        return ToolCall(id=x, name=name, item_id=item, namespace=ns, index=k)


# The same fields of any sequence of call facts (a `KeptFacts`, or the decoded calls
# tests and `build_capture` hand the stages): from the columns where they are kept.


def sequences_of(calls: Sequence[CallFacts]) -> Iterable[int]:
    return calls.sequences() if isinstance(calls, KeptFacts) else (c.sequence for c in calls)


def shared_of(calls: Sequence[CallFacts]) -> Iterable[SharedFacts]:
    return calls.shared() if isinstance(calls, KeptFacts) else (c.shared for c in calls)


def outputs_of(calls: Sequence[CallFacts]) -> Iterable[tuple[str | None, Sequence[ToolCall]]]:
    if isinstance(calls, KeptFacts):
        return calls.outputs()
    return ((c.response_id, c.emitted) for c in calls)


def response_ids_of(calls: Sequence[CallFacts]) -> Iterable[str | None]:
    if isinstance(calls, KeptFacts):
        return calls.response_ids()
    return (c.response_id for c in calls)


def response_id_of(calls: Sequence[CallFacts], i: int) -> str | None:
    return calls.response_id(i) if isinstance(calls, KeptFacts) else calls[i].response_id

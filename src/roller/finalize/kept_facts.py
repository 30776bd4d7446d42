"""Every call's `CallFacts`, as finalize keeps them in memory from decode to assembly: a
row of bytes a call, the record rebuilt when asked.

The facts of every call stay in memory while the bodies stay on the tape, so what they
hold per call is what bounds finalize's memory (docs/benchmarks.md, "Finalize at scale,
round 5"). As records they cost ~0.8 KB a call: the record, its integers, the response
and tool-call ids as strings, a `ToolCall` per emitted tool call, a tuple of the result
ids its context carries. `KeptFacts` keeps one `marshal`led row per call in one buffer
(~0.1 KB): the call's own values (sequence, request time, response id, the emitted tool
calls' fields), a code into one table for each value many calls share (kind, models,
statuses, errors, tool names, the wire identity: one object for a participant's equal
identities), and its result ids as a prefix of its conversation's list
(`roller.finalize.result_ids`). `kept[i]` rebuilds the record (a few µs), equal to
what decode gave but for the emitted tool calls' `arguments` (no later stage reads them;
the shell took them from the `DecodedCall`); `result_ids(i)` and `emitted(i)` give one
field without the record, for the stages that read those per pair of calls.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from roller.capture.lazy_sequence import LazySequence
from roller.finalize.call_facts import CallFacts, SharedFacts
from roller.finalize.decode import DecodedCall
from roller.finalize.result_ids import ResultIds, ResultLists
from roller.finalize.rows import Rows
from roller.identity import WireIdentity
from roller.wire.types import ToolCall

# a row: sequence, request time, response id, the emitted tool calls' fields (id, name,
# item id, namespace, index), the code of its `SharedFacts`; the result ids' list and
# count are columns of their own (the derived-relation scan asks for them per pair)
_Row = tuple[Any, ...]
_KEEP_SHARED = 4  # per participant, the distinct shared facts compared with


class KeptFacts(LazySequence[CallFacts]):
    """The facts of the calls decoded so far, in arrival order (`add`)."""

    def __init__(self) -> None:
        self._rows: Rows[_Row] = Rows()
        self._lists = array("i")  # per call: its result ids' list in `_results`
        self._counts = array("i")  # ... and how many of that list's first ids it carries
        self._shared_codes = array("i")  # per call: its `SharedFacts` (also in its row)
        self._shared: list[SharedFacts] = []
        self._recent: dict[str | None, list[int]] = {}  # per participant: shared facts
        self._last_identity: dict[str | None, WireIdentity] = {}
        self._results = ResultLists()

    def add(self, call: DecodedCall) -> CallFacts:
        """Keep `call`'s facts; the kept record (as `self[len(self) - 1]`)."""
        emitted = tuple((t.id, t.name, t.item_id, t.namespace, t.index) for t in call.emitted)
        ids = tuple(dict.fromkeys(r.id for r in call.results if r.id is not None))
        row = (call.sequence, call.request_time_ns, call.response_id, emitted)
        shared = self._shared_code(call)
        self._shared_codes.append(shared)
        self._rows.append((*row, shared))
        number, count = self._results.add(ids)
        self._lists.append(number)
        self._counts.append(count)
        view = self._results.view(number, count)
        return CallFacts(*row[:3], _emitted(emitted), view, self._shared[shared])

    def _shared_code(self, call: DecodedCall) -> int:
        """The code of `call`'s shared facts: a participant's equal ones (and equal
        identities) are one object, compared equal first."""
        identity = call.identity
        key = identity.participant_key
        last = self._last_identity.get(key)
        if last is not None and last == identity:
            identity = last
        else:
            self._last_identity[key] = identity
        shared = SharedFacts(
            call.kind,
            call.model,
            call.response_model,
            identity,
            call.context_ok,
            call.output_complete,
            call.tool_call_without_identity,
            call.execution_status,
            call.response_capture_status,
            call.errors,
        )
        recent = self._recent.setdefault(key, [])
        for code in recent:
            if self._shared[code] == shared:
                return code
        self._shared.append(shared)
        recent.insert(0, len(self._shared) - 1)
        del recent[_KEEP_SHARED:]
        return len(self._shared) - 1

    def result_ids(self, i: int) -> ResultIds:
        """Call i's `result_ids`, without the rest of its record."""
        return self._results.view(self._lists[i], self._counts[i])

    def carries(self, i: int, result_id: str) -> bool:
        """`result_id in self[i].result_ids`, without the record or the view."""
        return self._results.carries(self._lists[i], self._counts[i], result_id)

    def shared(self) -> Iterator[SharedFacts]:
        """Every call's `SharedFacts`, in order, without the rest of its record."""
        shared = self._shared
        return (shared[code] for code in self._shared_codes)

    def emitted(self, i: int) -> Sequence[ToolCall]:
        """Call i's `emitted`, without the rest of its record."""
        return _emitted(self._rows.row(i)[3])

    def _make(self, i: int) -> CallFacts:
        sequence, time, response_id, emitted, shared = self._rows.row(i)
        return CallFacts(
            sequence,
            time,
            response_id,
            _emitted(emitted),
            self._results.view(self._lists[i], self._counts[i]),
            self._shared[shared],
        )

    def __len__(self) -> int:
        return len(self._rows)


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

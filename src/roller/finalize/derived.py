"""The context relations derived from calls: the scan, and each one's record and line.

A conversation resends every earlier tool result, so derived relations
(`result_in_context`, `launch_ack_in_context`; found by `derive_in_context`, the rules
in `roller.finalize.relate`'s docstring) are most of a capture's relations: about
thirteen per call in a long one. Each is a
`Derived` (the eight facts that vary), turned into a `RelationRecord` where a record is
asked for (`record`) and straight into its line of relations.jsonl where finalize
streams them (`line`): the same bytes `serialize(record(d, id))` gives, without building
and validating three pydantic models per relation (roller built every value itself).

Facts relied on: orjson and pydantic's serializer write strings, None and booleans to
the same bytes (compact, only `"`, `\\` and control characters escaped, other text as
UTF-8), so a line is the record's text put together from orjson's strings in the
record's field order (`_KEYS`, checked against the model by
tests/finalize/test_derived.py); both refuse a lone surrogate, which `line` then leaves
to the record path, so an error is the record path's too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, NamedTuple

import orjson

from roller.capture.models import Evidence, RelationRecord, RelationType
from roller.finalize.call_index import CallIndex
from roller.harnesses.base import NativeCapture

SCHEMA: Literal["roller.relation/v1"] = "roller.relation/v1"
_KEYS = (
    "schema",
    "relation_id",
    "type",
    "status",
    "parent_participant_id",
    "child_participant_id",
    "source_call_id",
    "target_call_id",
    "tool_call_id",
    "model_tool_ref",
    "evidence",
    "note",
)


class Derived(NamedTuple):
    """One derived relation: tool call `ref` (`source_ref`) emitted by call `source`,
    its result (carried under `target_ref`) in the input of the later call `target`."""

    type: RelationType
    parent_participant_id: str | None
    child_participant_id: str | None
    source_call_id: str
    target_call_id: str
    source_ref: str
    target_ref: str


def record(d: Derived, relation_id: str) -> RelationRecord:
    return RelationRecord(
        schema_=SCHEMA,
        relation_id=relation_id,
        type=d.type,
        status="established",
        parent_participant_id=d.parent_participant_id,
        child_participant_id=d.child_participant_id,
        source_call_id=d.source_call_id,
        target_call_id=d.target_call_id,
        tool_call_id=d.source_ref,
        model_tool_ref=None,
        evidence=[
            Evidence(source=f"call:{d.source_call_id}", ref=d.source_ref, retained=True),
            Evidence(source=f"call:{d.target_call_id}", ref=d.target_ref, retained=True),
        ],
        note=None,
    )


def line(d: Derived, relation_id: str) -> bytes:
    """`serialize(record(d, relation_id))` as a line (LF-terminated), written directly."""
    return Lines().line(d, relation_id)


def _json(value: str | None) -> bytes:
    return b"null" if value is None else orjson.dumps(value)


class Lines:
    """Derived relations' lines (`line`), in the record's field order (`_KEYS`): a run
    of relations from one tool call shares all but their id and target, so that part is
    encoded once per run, and a call is the target of many runs (every earlier tool call
    of its conversation), so its id's two encodings are kept for the next runs (the last
    few thousand). A string orjson refuses (a lone surrogate) takes the record path, so
    an error is the record path's too."""

    def __init__(self) -> None:
        self._key: tuple[str | None, ...] = ()
        self._shared = (b"", b"", b"")
        self._targets: dict[str, tuple[bytes, bytes]] = {}

    def line(self, d: Derived, relation_id: str) -> bytes:
        key = (
            d.type,
            d.parent_participant_id,
            d.child_participant_id,
            d.source_call_id,
            d.source_ref,
            d.target_ref,
        )
        try:
            if key != self._key:
                self._shared = self._run(d)
                self._key = key
            target = self._targets.get(d.target_call_id) or self._target(d.target_call_id)
            head, middle, tail = self._shared
            return b"".join(
                (
                    b'{"schema":"roller.relation/v1","relation_id":',
                    orjson.dumps(relation_id),
                    head,
                    target[0],
                    middle,
                    target[1],
                    tail,
                )
            )
        except TypeError:  # a lone surrogate: the record path says what it says of it
            self._key = ()
            return record(d, relation_id).model_dump_json(by_alias=True).encode() + b"\n"

    @staticmethod
    def _run(d: Derived) -> tuple[bytes, bytes, bytes]:
        """What a run's lines share: before the target's id, between its two, after."""
        source, ref = d.source_call_id, d.source_ref
        return (
            b',"type":%b,"status":"established","parent_participant_id":%b,'
            b'"child_participant_id":%b,"source_call_id":%b,"target_call_id":'
            % (
                _json(d.type),
                _json(d.parent_participant_id),
                _json(d.child_participant_id),
                _json(source),
            ),
            b',"tool_call_id":%b,"model_tool_ref":null,"evidence":[{"source":%b,'
            b'"ref":%b,"retained":true},{"source":'
            % (_json(ref), _json("call:" + source), _json(ref)),
            b',"ref":%b,"retained":true}],"note":null}\n' % _json(d.target_ref),
        )

    def _target(self, call_id: str) -> tuple[bytes, bytes]:
        """The target's id as JSON, and its evidence source (`call:<id>`), kept."""
        if len(self._targets) >= 4096:
            self._targets.clear()
        found = self._targets[call_id] = (orjson.dumps(call_id), orjson.dumps("call:" + call_id))
        return found


def _tool_call_facts(
    native: NativeCapture | None,
) -> tuple[dict[str, tuple[str | None, ...]], set[str]]:
    """Per tool-call id, the children it spawned (in native order; one relation each) or
    delivered (one, or None: several or unknown); and the tool calls that launched a
    background child."""
    spawned: dict[str, tuple[str | None, ...]] = {}
    background: set[str] = set()
    delivered: dict[str, set[str | None]] = {}
    for rel in native.relations if native is not None else ():
        if rel.tool_call_id is None:
            continue
        if rel.type == "spawn":
            known = spawned.get(rel.tool_call_id, ())
            if rel.child_key not in known:
                spawned[rel.tool_call_id] = (*known, rel.child_key)
        elif rel.type == "launch_acknowledged":
            background.add(rel.tool_call_id)
        elif rel.type == "result_delivered":
            delivered.setdefault(rel.tool_call_id, set()).add(rel.child_key)
    for ref, children in delivered.items():
        # one tool call may deliver several children's results: it names none then
        spawned.setdefault(ref, (next(iter(children)) if len(children) == 1 else None,))
    return spawned, background


def derive_in_context(
    index: CallIndex,
    native: NativeCapture | None,
    bound: Sequence[RelationRecord] = (),
) -> Iterator[Derived]:
    """One relation per (tool call, later call of the same participant carrying its result).

    `bound` are the relations `bind_native` already made: a result it already placed in
    a call (a tool result that delivered a child's result, e.g. Codex `wait_agent`) is not
    derived a second time, and the child such a tool call delivered is named.
    """
    spawned, background = _tool_call_facts(native)
    done = {(r.type, r.tool_call_id, r.target_call_id) for r in bound}
    pid, call_ids, carrying = index.participant_ids, index.call_ids, index.carrying
    # a call is the target of every earlier tool call of its conversation, and its id
    # is made when asked (numbered): each made once, the last few thousand kept
    made: dict[int, str] = {}
    for i, owner in enumerate(index.owners):
        emitted = index.emitted(i) if owner is not None else ()
        if not emitted:
            continue
        assert owner is not None
        if len(made) > 4096:
            made.clear()
        later = index.later_of_participant(owner, i)
        source, parent = call_ids[i], pid.get(owner)
        for tool, tool_id in emitted:
            if tool_id is None:
                continue
            ref = tool.ref or tool_id
            children = spawned.get(ref, spawned.get(tool_id, (None,)))
            kind: RelationType = (
                "launch_ack_in_context"
                if (ref in background or tool_id in background)
                else "result_in_context"
            )
            for j in carrying(later, tool_id):
                target = made.get(j)
                if target is None:
                    target = made[j] = call_ids[j]
                if (kind, ref, target) in done:
                    continue
                for child_key in children:
                    yield Derived(  # by position: half the cost of keywords, ~13 a call
                        kind,
                        parent,
                        pid.get(child_key) if child_key else None,
                        source,
                        target,
                        ref,
                        tool_id,
                    )

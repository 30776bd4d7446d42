"""The relate stage: native relations bound to calls, and context relations derived from calls.

Decoded calls, their owners and ids (`roller.finalize.ids`) and the adapter's
`NativeCapture` in; `Related` out (`relate`). Its capture errors: `native_log_problem`
for a native tool-id list that does not fit its output (`tool_refs_of`), and
`relations_unknown` for relations not bound uniquely.

Rules kept (`docs/protocol.md`, "Relation"):
- A native relation is bound to the parent call that emitted its tool call: by the
  response id the native log names, else by the tool-call id among the parent's
  calls. No unique call -> `unknown`, never guessed.
- Responses tool references need BOTH `call_id` and `item_id` to match one output item
  (`model_tool_ref`); one alone leaves the relation `unknown`.
- A result delivered by notification is bound to the later call with the native
  response id (or the harness's own request id, the call's wire `run_id`), and the
  notification text must be found in that call's actual request.
- `result_in_context` is derived for every tool call: one relation per later call of the
  same participant whose input carries a result for that tool-call id. When the tool
  call launched a background child, what enters later inputs is the launch
  acknowledgement, so those relations are `launch_ack_in_context` instead; completion
  comes only from a native `child_completed` / notification. One tool call that spawned
  several children (Hermes's batched `delegate_task`) carries all their results: one
  relation per child and later call.
- A tool call's id is the one its HTTP output carries, or the harness-assigned one
  (`roller.finalize.tool_ids`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from roller.capture.models import Evidence, ModelToolRef, RelationRecord
from roller.finalize import derived
from roller.finalize.call_facts import CallFacts
from roller.finalize.call_index import CallIndex, Texts, no_texts
from roller.finalize.derived import Derived, derive_in_context
from roller.finalize.ids import CaptureIds
from roller.finalize.kept_facts import response_id_of
from roller.finalize.tool_ids import ToolIds, tool_refs_of
from roller.harnesses.base import NativeCapture, NativeEvidence, NativeRelation


def _norm(text: str) -> str:
    return " ".join(text.split())


def text_in_request(fragments: Sequence[str], text: str) -> bool:
    """Whether `text` (whitespace-normalized) occurs in a call's actual input (its text
    fragments)."""
    needle = _norm(text)
    if not needle:
        return False
    return any(needle in _norm(fragment) for fragment in fragments)


def _evidence(items: Sequence[NativeEvidence]) -> list[Evidence]:
    """Native sources as retained; assembly clears the flag when raw/ will be cleaned."""
    return [Evidence(source=f"native:{e.path}", ref=e.ref, retained=True) for e in items]


def _call_evidence(call_id: str, ref: str | None) -> Evidence:
    return Evidence(source=f"call:{call_id}", ref=ref, retained=True)


def _find_emitting_call(
    index: CallIndex, rel: NativeRelation
) -> tuple[int | None, ModelToolRef | None, str | None]:
    """The parent call whose output emitted `rel`'s tool call; (index, ref, why-not)."""
    if rel.source_response_id is not None:
        found = index.by_response_id(rel.source_response_id)
        if len(found) != 1:
            return None, None, (f"{len(found)} calls carry response id {rel.source_response_id}")
        candidates = found
    elif rel.parent_key is not None:
        candidates = index.of_participant(rel.parent_key)
    else:
        return None, None, "the native relation names no parent"

    if rel.model_tool_ref is not None:
        call_id, item_id = rel.model_tool_ref
        both = [
            i
            for i in candidates
            if any(t.id == call_id and t.item_id == item_id for t in index.calls[i].emitted)
        ]
        one = [
            i
            for i in candidates
            if any((t.id == call_id) != (t.item_id == item_id) for t in index.calls[i].emitted)
        ]
        if len(both) == 1:
            return both[0], ModelToolRef(call_id=call_id, item_id=item_id, matched=True), None
        ref = ModelToolRef(call_id=call_id, item_id=item_id, matched=False)
        if one:
            return None, ref, "only one of call_id / item_id matches the HTTP output"
        return None, ref, f"{len(both)} parent calls emit {call_id}|{item_id}"

    if rel.tool_call_id is None:
        return None, None, "the native relation names no tool call"
    emitting = [i for i in candidates if index.emits(i, rel.tool_call_id)]
    if len(emitting) == 1:
        return emitting[0], None, None
    return None, None, f"{len(emitting)} parent calls emit tool call {rel.tool_call_id}"


@dataclass
class _Binding:
    """Where one native relation lands among the calls, and each reason it does not."""

    notes: list[str]
    source: int | None = None
    target: int | None = None
    model_ref: ModelToolRef | None = None
    established: bool = True

    def fail(self, why: str) -> None:
        self.established = False
        self.notes.append(why)


def _bind(index: CallIndex, rel: NativeRelation, known_parent: bool, known_child: bool) -> _Binding:
    b = _Binding(notes=[rel.note] if rel.note else [])
    if rel.parent_key is not None and not known_parent:
        b.fail(f"parent {rel.parent_key} is not a known participant")
    if rel.child_key is not None and not known_child:
        b.fail(f"child {rel.child_key} is not a known participant")
    if rel.type in ("spawn", "launch_acknowledged"):
        b.source, b.model_ref, why = _find_emitting_call(index, rel)
        if b.source is None:
            b.fail(why or "no emitting call")
    elif rel.type in ("result_delivered", "result_in_context"):
        if rel.type == "result_delivered":
            b.source, _, _ = _find_emitting_call(index, rel)
        _bind_target(index, rel, b)
    return b


def _bind_target(index: CallIndex, rel: NativeRelation, b: _Binding) -> None:
    """The later call a result was delivered to: by response id (or the harness's own
    request id), and the delivered text must be in that call's actual request."""
    if rel.target_response_id or rel.target_run_id:
        if rel.target_response_id:
            found, what = index.by_response_id(rel.target_response_id), "response"
        else:
            found, what = index.by_run_id(rel.target_run_id or ""), "run"
        if len(found) != 1:
            b.fail(
                f"{len(found)} calls carry {what} id {rel.target_response_id or rel.target_run_id}"
            )
            return
        b.target = found[0]
        if rel.delivered_text is not None and not text_in_request(
            index.texts(b.target), rel.delivered_text
        ):
            b.fail("the delivered text is not in that call's actual request")
    elif rel.delivered_text is not None:
        # A notification proves delivery only with the response that answered it.
        b.fail("the native log names no response answering the notification")


def bind_native(
    index: CallIndex, native: NativeCapture, new_id: Callable[[], str]
) -> list[RelationRecord]:
    out: list[RelationRecord] = []
    pid = index.participant_ids
    for rel in native.relations:
        parent = pid.get(rel.parent_key) if rel.parent_key else None
        child = pid.get(rel.child_key) if rel.child_key else None
        b = _bind(index, rel, parent is not None, child is not None)
        ev = _evidence(rel.evidence)
        for i in (b.source, b.target):
            if i is not None:
                ev.append(_call_evidence(index.call_ids[i], response_id_of(index.calls, i)))
        out.append(
            RelationRecord(
                schema_="roller.relation/v1",
                relation_id=new_id(),
                type=rel.type,
                status="established" if b.established else "unknown",
                parent_participant_id=parent,
                child_participant_id=child,
                source_call_id=index.call_ids[b.source] if b.source is not None else None,
                target_call_id=index.call_ids[b.target] if b.target is not None else None,
                tool_call_id=rel.tool_call_id,
                model_tool_ref=b.model_ref,
                evidence=ev,
                note="; ".join(b.notes) or None,
            )
        )
        if rel.type == "result_delivered" and b.target is not None and b.established:
            out += _entered(index, rel, b.target, b, (parent, child), ev, new_id)
    return out


def _entered(
    index: CallIndex,
    rel: NativeRelation,
    target: int,
    b: _Binding,
    parent_child: tuple[str | None, str | None],
    ev: list[Evidence],
    new_id: Callable[[], str],
) -> list[RelationRecord]:
    """A notification-delivered result enters the bound call, and every later call of the
    same participant whose actual request still carries the notification text."""
    entered = [target]
    if rel.delivered_text is not None and rel.parent_key is not None and rel.carried_forward:
        entered += [
            j
            for j in index.of_participant(rel.parent_key)
            if j > target and text_in_request(index.texts(j), rel.delivered_text)
        ]
    parent, child = parent_child
    return [
        RelationRecord(
            schema_="roller.relation/v1",
            relation_id=new_id(),
            type="result_in_context",
            status="established",
            parent_participant_id=parent,
            child_participant_id=child,
            source_call_id=index.call_ids[b.source] if b.source is not None else None,
            target_call_id=index.call_ids[j],
            tool_call_id=rel.tool_call_id,
            model_tool_ref=b.model_ref,
            evidence=[*ev, _call_evidence(index.call_ids[j], response_id_of(index.calls, j))]
            if j != target
            else ev,
            note="delivered by notification; bound by response id and request text"
            if j == target
            else "the notification text, bound to an earlier response, is in this "
            "call's actual request",
        )
        for j in entered
    ]


@dataclass(frozen=True)
class Related:
    """What the relate stage gives: per call the ids its tool calls' results carry, the
    native relations bound to calls (native sources still marked retained; assembly
    clears them when raw/ is cleaned), and the native tool-id lists that did not fit
    their outputs. The context relations derived from calls are many (a conversation
    resends every earlier result), so they are derived when iterated, never all held:
    `iter_relations()` gives the bound ones, then the derived ones, numbered in that
    order; `relations` is the same as a list."""

    tool_ids: Sequence[ToolIds]
    bound: list[RelationRecord]
    tool_id_problems: list[str]
    index: CallIndex
    native: NativeCapture | None
    ids: CaptureIds

    def iter_relations(self) -> Iterator[RelationRecord]:
        yield from self.bound
        for d, relation_id in self.iter_derived():
            yield derived.record(d, relation_id)

    def iter_derived(self) -> Iterator[tuple[Derived, str]]:
        """The derived relations with their ids, after the bound ones'."""
        new_id = self.ids.relation_ids(start=len(self.bound) + 1)
        for d in derive_in_context(self.index, self.native, self.bound):
            yield d, new_id()

    @property
    def relations(self) -> list[RelationRecord]:
        return list(self.iter_relations())

    def unknown_messages(self) -> list[str]:
        """The `relations_unknown` capture error's message; none when all are bound.
        Only bound native relations can be unknown: derived ones are established."""
        unknown = sum(1 for r in self.bound if r.status == "unknown")
        if not unknown:
            return []
        return [f"{unknown} native relation(s) could not be bound to calls uniquely"]


def relate(
    calls: Sequence[CallFacts],
    owners: Sequence[str | None],
    ids: CaptureIds,
    native: NativeCapture | None,
    texts: Texts = no_texts,
) -> Related:
    """Native relations bound to calls; the context relations derived from calls follow
    when `Related.iter_relations()` runs. Relation ids are numbered in that order."""
    tool_ids, problems = tool_refs_of(calls, native)
    index = CallIndex(calls, ids.calls, owners, ids.participants, tool_ids=tool_ids, texts=texts)
    bound = bind_native(index, native, ids.relation_ids()) if native is not None else []
    return Related(tool_ids, bound, problems, index, native, ids)

"""A forked child's copied prefix, as recorded on its participant (part of assembly).

A harness that forks a child from its parent's history (DeepSeek Harness
`subagent_fork`) makes the child resend a copy of that history at the start of every
request. The calls keep their whole context as sent; the participant record says how
many leading history items are the copy (`InheritedContextRecord`), so a consumer of the
child's own turns (trajectory exports) can leave them out.

The count is the native log's (`NativeParticipant.inherited`); it is checked against the
wire, never derived from it: the child's first request must start with exactly that many
items equal (the protocol's own item comparison, `Codec.item_key`) to the first items of
one request of the participant the copy came from. A check that fails is recorded with
why (`checked: false`); the attribution is never touched by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from roller.capture.models import Evidence, InheritedContextRecord
from roller.finalize.call_facts import CallFacts
from roller.finalize.decode import RequestContext
from roller.finalize.kept_facts import shared_of
from roller.harnesses.base import InheritedContext
from roller.wire import PROTOCOL_NAMES, codec_for
from roller.wire.types import Key

Requests = Callable[[int], RequestContext]  # call index -> its request, decoded on demand


def _keys(request: RequestContext) -> list[Key] | None:
    """The request's history items as comparable keys, or None when unreadable."""
    name = next((n for n in PROTOCOL_NAMES if n == request.protocol), None)
    if name is None:
        return None
    codec = codec_for(name)
    history = codec.history(request.context)
    return None if history is None else [codec.item_key(item) for item in history.items]


def _check(
    inherited: InheritedContext, requests: Requests, mine: list[int], theirs: list[int]
) -> str | None:
    """Why the child's first request does not start with the copy; None when it does."""
    if not mine:
        return "the child has no captured request to check the copy in"
    first = _keys(requests(mine[0]))
    if first is None or len(first) <= inherited.items:
        return "the child's first request has no history beyond the copied items"
    prefix = first[: inherited.items]
    for i in theirs:
        source = _keys(requests(i))
        if source is not None and source[: inherited.items] == prefix:
            return None
    return "no request of the source participant starts with the child's copied items"


def inherited_record(
    inherited: InheritedContext | None,
    key: str,
    calls: Sequence[CallFacts],
    owners: Sequence[str | None],
    requests: Requests,
    pids: Mapping[str, str],
    retained: bool,
) -> InheritedContextRecord | None:
    """The participant `key`'s copied prefix as recorded, or None when it has none.
    Only the requests the check compares are decoded again (`requests`)."""
    if inherited is None:
        return None
    mine = [
        i
        for i, (owner, facts) in enumerate(zip(owners, shared_of(calls), strict=True))
        if owner == key and facts.kind == "generation"
    ]
    theirs = [i for i, owner in enumerate(owners) if owner == inherited.from_key]
    why = _check(inherited, requests, mine, theirs)
    return InheritedContextRecord(
        from_participant_id=pids.get(inherited.from_key),
        items=inherited.items,
        checked=why is None,
        evidence=[
            Evidence(source=f"native:{e.path}", ref=e.ref, retained=retained)
            for e in inherited.evidence
        ],
        note=why,
    )

"""The data the HTML viewer shows, section by section (`Page`: a `Capture` in, JSON-ready
values out, a call at a time).

- `summary`: the capture's summary line (`roller.view.tree.summary_of`);
- `participants`: each agent with its parent, state, native ids, call ids, the
  relations that link it (with their evidence) and token totals, its own and rolled up
  over its subtree (from each call's token counts, `TokenCounts`);
- `calls`: per call the statuses, usage, times (ms from the first request), the exact
  request split into its items (each with its diff tag against the same agent's
  previous call: `same`, `from_output` — the previous call's output —, `new`), the
  system prompt, tool definitions and the rest of the body, the reassembled output and
  its tool calls, each with the id its result is found by;
- `results`: each tool result, with the call whose input first carried it
  (`roller.view.answers`), given with that call (`Shown`);
- `order`: the call ids in sequence order; `relations`: every relation, for links
  between calls; `capture_errors`.
The page writer (`roller.view.html`) elides base64 blobs and counts them.

The diff compares items by their OpenAI chat form (`Codec.chat`, `roller.wire.chat`) without
reasoning — close to the main trajectory's "same message", and protocol-neutral; the
view is a sibling of `roller.export` and does not import it. An agent's previous call is
remembered by the digests of its items (`Turn`), so memory does not grow with its
transcript.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture, RelationRecords
from roller.capture.relation_check import checked_relation, relation_values
from roller.view.answers import Answers
from roller.view.page_json import Keyed, keyed
from roller.view.tree import TokenCounts, call_summary, participant_summary, summary_of
from roller.wire import Codec, codec_named
from roller.wire.types import History


def _stamp_ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def _ms(stamp: str | None, origin: float) -> float | None:
    return None if stamp is None else round(_stamp_ms(stamp) - origin, 3)


class ChatDigests:
    """Each item's chat form without reasoning, as canonical JSON, by its sha256: the
    diff compares equal items only, so digests give the same match as the texts, and an
    agent's previous call is remembered by these, not by its transcript. An item's chat
    form is its own (`Codec.chat.items([item])`), so its digest is remembered by the
    item's exact JSON text (its `Keyed` key) and protocol: a conversation resends its
    items on every call, and converting each again took a third of the page's time.
    Memory: ~140 bytes a distinct item."""

    def __init__(self) -> None:
        self._known: dict[str, dict[bytes, bytes]] = {}  # protocol -> item key -> chat's

    def of(self, protocol: str, codec: Codec, items: list[Keyed]) -> tuple[bytes, ...]:
        known = self._known.setdefault(protocol, {})
        out = []
        for item in items:
            digest = known.get(item.key)
            if digest is None:
                digest = known[item.key] = _chat_digest(codec, item.value)
            out.append(digest)
        return tuple(out)


def _chat_digest(codec: Codec, item: Any) -> bytes:
    messages = [
        {k: v for k, v in m.message.items() if k != "reasoning_content"}
        for m in codec.chat.items([item]).messages
    ]
    key = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _digest(value: Any) -> bytes:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("ascii")).digest()


@dataclass(frozen=True)
class Turn:
    """What the diff keeps of an agent's generation call for its next one: the digests
    of its input items (None: its request has no item list) and output items, and of
    its system prompt."""

    call_id: str
    protocol: str | None
    items: tuple[bytes, ...] | None
    produced: tuple[bytes, ...]
    system: bytes


def _turn(
    call: CallRecord,
    codec: Codec | None,
    mine: History | None,
    items: list[Keyed],
    chat: ChatDigests,
) -> Turn:
    if codec is None or mine is None:
        return Turn(call.call_id, call.protocol, None, (), b"")
    assert call.protocol is not None  # a codec was found by it
    produced = [keyed(i) for i in codec.output_items(call.output)]
    return Turn(
        call.call_id,
        call.protocol,
        chat.of(call.protocol, codec, items),
        chat.of(call.protocol, codec, produced),
        _digest(codec.system_prompt(mine.config)),
    )


def _diff(
    call: CallRecord, mine: History, now: Turn | None, previous: Turn | None
) -> tuple[list[str], dict[str, Any] | None]:
    """A tag per input item against the previous call's input + output, and a summary."""
    if previous is None or previous.protocol != call.protocol or previous.items is None:
        return ["new"] * len(mine.items), None
    assert now is not None and now.items is not None  # an agent's call with a history
    before = list(previous.items)
    tags = ["new"] * len(now.items)
    matcher = difflib.SequenceMatcher(
        a=before + list(previous.produced), b=now.items, autojunk=False
    )
    removed = 0
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            for offset in range(b1 - b0):
                tags[b0 + offset] = "same" if a0 + offset < len(before) else "from_output"
        if op in ("delete", "replace"):
            removed += sum(1 for a in range(a0, a1) if a < len(before))
    summary = {
        "previous_call_id": previous.call_id,
        "same": tags.count("same"),
        "from_output": tags.count("from_output"),
        "new": tags.count("new"),
        "removed": removed,
        "system_changed": previous.system != now.system,
    }
    return tags, summary


def _request(
    call: CallRecord,
    codec: Codec | None,
    history: History | None,
    items: list[Keyed],
    tags: list[str],
) -> dict[str, Any]:
    if codec is None or history is None:
        return {"raw": call.context}
    return {
        "items": [
            {"tag": tags[i] if i < len(tags) else "new", "value": item}
            for i, item in enumerate(items)
        ],
        "system": codec.system_prompt(history.config),
        "tools": history.tools,
        "config": {k: v for k, v in history.config.items() if k != codec.system_field},
    }


def _tool(tool_id: str | None, name: str | None, result_id: str) -> dict[str, Any]:
    """A tool call of an output, and the id its result is found by in the page's results
    (`Shown.results`; the viewer puts it back as `result_in`, the later call whose input
    carried it, and `result`)."""
    return {"id": tool_id, "name": name, "result_id": result_id}


def _call(
    call: CallRecord,
    origin: float,
    request: dict[str, Any],
    diff: dict[str, Any] | None,
) -> dict[str, Any]:
    summary = call_summary(call)  # the fields the terminal tree shows, then the page's own
    del summary["children"], summary["status"]
    return {
        **summary,
        "participant_id": call.participant_id,
        "finish_reason": call.finish_reason,
        "http_status": call.response.status,
        "outcome": call.response.outcome,
        "start_ms": _ms(call.request.received_at, origin),
        "end_ms": _ms(call.response.ended_at, origin),
        "statuses": {
            "execution": call.execution_status,
            "response_capture": call.response_capture_status,
            "identity": call.identity_status,
            "capture": call.capture_status,
            "export": call.export_status,
        },
        "errors": [e.model_dump() for e in call.errors],
        "output_problems": list(call.output_problems),
        "attribution": call.attribution.model_dump(),
        "request": request,
        "diff": diff,
        "output": call.output,
        "output_complete": call.output_complete,
        "provider_error": call.provider_error,
        "tool_calls": [
            _tool(t.ref or t.id, t.name, t.id or t.ref or "") for t in call.tool_refs.emitted
        ],
    }


@dataclass(frozen=True)
class _Read:
    """A call's request as the page's readers take it: its codec and history, and the
    history's items keyed (`Keyed`: dumped and hashed once, for the tool results, the
    diff and the value table)."""

    codec: Codec | None
    history: History | None
    items: list[Keyed]

    @classmethod
    def of(cls, call: CallRecord) -> _Read:
        codec = codec_named(call.protocol)
        history = codec.history(call.context) if codec else None
        return cls(codec, history, [keyed(i) for i in history.items] if history else [])


def _detail(
    call: CallRecord, read: _Read, origin: float, previous: Turn | None, chat: ChatDigests
) -> tuple[dict[str, Any], Turn | None]:
    """The call as the page shows it, and its `Turn` when it is an agent's generation
    call (the next one of the agent is diffed against it)."""
    codec, mine, items = read.codec, read.history, read.items
    own = call.kind == "generation" and bool(call.participant_id)
    now = _turn(call, codec, mine, items, chat) if own else None
    tags: list[str] = []
    diff = None
    if codec is not None and mine is not None:
        tags, diff = _diff(call, mine, now, previous)
    return _call(call, origin, _request(call, codec, mine, items, tags), diff), now


def _relations(capture: Capture) -> Iterator[dict[str, Any]]:
    """Every relation's JSON values, as `model_dump(by_alias=True, mode="json")` gives
    them; a capture's on disk read by msgspec (`relation_check.relation_values`): a
    long capture holds ~13 relations a call, which pydantic read and dumped in ~6 µs
    each, msgspec in ~2 (10k calls: 0.88 -> 0.3 s)."""
    relations = capture.relations
    if isinstance(relations, RelationRecords):
        return map(relation_values, relations.read_by(checked_relation))
    return (r.model_dump(by_alias=True, mode="json") for r in relations)


def _links(capture: Capture) -> dict[str, list[dict[str, Any]]]:
    """Each child participant's relations as the page lists them, from one pass."""
    links: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in _relations(capture):
        _link(links, r)
    return links


_LINKED = (  # a relation's fields a participant's links show
    "relation_id",
    "type",
    "status",
    "source_call_id",
    "target_call_id",
    "tool_call_id",
    "evidence",
    "note",
)


def _link(links: dict[str, list[dict[str, Any]]], r: dict[str, Any]) -> None:
    child = r["child_participant_id"]
    if child is None:
        return
    link = {key: r[key] for key in _LINKED}
    link["evidence"] = [dict(e) for e in link["evidence"]]  # (not shared with the row)
    links[child].append(link)


def _participant(p: ParticipantRecord, links: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        **participant_summary(p),  # the fields the terminal tree shows, then the page's own
        "parent_participant_id": p.parent_participant_id,
        "call_ids": list(p.call_ids),
        "evidence": [e.model_dump() for e in p.evidence],
        "links": links.get(p.participant_id, []),
    }


def _roll_up(participants: list[dict[str, Any]], calls: dict[str, tuple[int, int]]) -> None:
    for p in participants:
        mine = [calls[c] for c in p["call_ids"] if c in calls]
        p["tokens"] = {
            "input": sum(c[0] for c in mine),
            "output": sum(c[1] for c in mine),
        }
    for p in participants:
        total = dict(p["tokens"])
        seen = {p["participant_id"]}
        stack = [q for q in participants if q["parent_participant_id"] == p["participant_id"]]
        while stack:
            q = stack.pop()
            if q["participant_id"] in seen:
                continue
            seen.add(q["participant_id"])
            total["input"] += q["tokens"]["input"]
            total["output"] += q["tokens"]["output"]
            stack.extend(
                r for r in participants if r["parent_participant_id"] == q["participant_id"]
            )
        p["subtree_tokens"] = total


class OutOfOrder(Exception):
    """calls.jsonl does not hold the calls in sequence order: `Page.calls()` stops at the
    first one out of it (finalize writes arrival order, which is sequence order), and
    the page is made again from `Page.open(capture, ordered=True)`."""


@dataclass(frozen=True)
class Shown:
    """A call as the page states it: its id, its detail, and the tool results its input
    is the first to carry (tool-call id, result), which the page keeps in a table of
    their own (`results`): the call that made a tool call comes before its result."""

    call_id: str
    detail: dict[str, Any]
    results: list[tuple[str, Any]]


class Page:
    """The page data of one attempt, section by section in the order the page states
    them: `calls()` (each call's detail, in sequence order, built when asked for, with
    the tool results it first carries: `Shown`), `relations()`, then `head()` (the
    attempt directory, the summary, the agents), `order`, `capture_errors`. One pass over
    the calls, `calls()`, holds a call and the `Turn` of each agent's last call, and
    keeps each call's token counts (`TokenCounts`), the call order and the ids of the
    results given; `relations()` gathers the agents' links on the way, so `head()`
    comes after both.
    Calls that calls.jsonl does not hold in sequence order stop the pass (`OutOfOrder`);
    `open(capture, ordered=True)` reads them whole and sorts them."""

    def __init__(self, capture: Capture, ordered: bool = False) -> None:
        self.capture = capture
        self.answers = Answers()
        self.tokens = TokenCounts()
        self.order: list[str] = []
        self.capture_errors = [e.model_dump() for e in capture.manifest.capture_errors]
        self._calls: Iterable[CallRecord] = capture.calls
        if ordered:
            self._calls = sorted(capture.calls, key=lambda c: c.sequence)
        self._links: dict[str, list[dict[str, Any]]] | None = None

    @classmethod
    @contextmanager
    def open(cls, capture: Capture, ordered: bool = False) -> Iterator[Page]:
        yield cls(capture, ordered)

    def calls(self) -> Iterator[Shown]:
        origin: float | None = None  # the first call's request
        last: dict[str, Turn] = {}  # participant -> its previous generation call
        chat = ChatDigests()
        sequence = None
        for call in self._calls:
            if sequence is not None and call.sequence < sequence:
                raise OutOfOrder(call.call_id)
            sequence = call.sequence
            if origin is None:
                origin = _stamp_ms(call.request.received_at)
            self.tokens.add(call)
            self.order.append(call.call_id)
            read = _Read.of(call)
            results = self.answers.add(call, read.codec, read.items)
            previous = last.get(call.participant_id or "") if call.kind == "generation" else None
            detail, turn = _detail(call, read, origin, previous, chat)
            if turn is not None and call.participant_id:
                last[call.participant_id] = turn
            yield Shown(call.call_id, detail, results)

    def relations(self) -> Iterator[dict[str, Any]]:
        links: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in _relations(self.capture):
            _link(links, r)
            yield r
        self._links = links

    def head(self) -> dict[str, Any]:
        m = self.capture.manifest
        links = self._links if self._links is not None else _links(self.capture)
        participants = [_participant(p, links) for p in m.participants]
        _roll_up(participants, self.tokens.calls)
        return {
            "attempt_dir": str(self.capture.paths.root),
            "summary": summary_of(m, self.tokens),
            "participants": participants,
        }

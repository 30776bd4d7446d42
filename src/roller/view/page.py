"""The data the HTML viewer shows, as one JSON-ready dict (pure: a `Capture` in).

- `participants`: each agent with its parent, state, native ids, call ids, the
  relations that link it (with their evidence) and token totals, its own and rolled up
  over its subtree;
- `calls`: per call the statuses, usage, times (ms from the first request), the exact
  request split into its items (each with its diff tag against the same agent's
  previous call: `same`, `from_output` — the previous call's output —, `new`), the
  system prompt, tool definitions and the rest of the body, the reassembled output, its
  tool calls and, per tool call, its result and the later call whose input carried it;
- `relations`: every relation, for links between calls.
Base64 blobs are elided (`roller.view.blobs`) and counted in `summary.elided_blobs`.

The diff compares items by their OpenAI chat form (`Codec.chat`, `roller.wire.chat`) without
reasoning — close to the main trajectory's "same message", and protocol-neutral; the
view is a sibling of `roller.export` and does not import it.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from datetime import datetime
from typing import Any

from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture
from roller.view.blobs import elide
from roller.view.tree import build_tree, call_summary, participant_summary
from roller.wire import Codec, codec_named


def _ms(stamp: str | None, origin: float) -> float | None:
    if stamp is None:
        return None
    return round(
        datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000 - origin, 3
    )


def _keys(codec: Codec, items: list[Any]) -> list[str]:
    """Each item's chat form without reasoning, as canonical JSON."""
    out = []
    for item in items:
        messages = [
            {k: v for k, v in m.message.items() if k != "reasoning_content"}
            for m in codec.chat.items([item]).messages
        ]
        out.append(json.dumps(messages, sort_keys=True, ensure_ascii=False))
    return out


def _diff(call: CallRecord, previous: CallRecord | None) -> tuple[list[str], dict[str, Any] | None]:
    """A tag per input item against the previous call's input + output, and a summary."""
    codec = codec_named(call.protocol)
    mine = codec.history(call.context) if codec else None
    if codec is None or mine is None:
        return [], None
    same_protocol = previous is not None and previous.protocol == call.protocol
    theirs = codec.history(previous.context) if previous and same_protocol else None
    if previous is None or theirs is None:
        return ["new"] * len(mine.items), None
    before = _keys(codec, theirs.items)
    produced = _keys(codec, codec.output_items(previous.output))
    now = _keys(codec, mine.items)
    tags = ["new"] * len(now)
    matcher = difflib.SequenceMatcher(a=before + produced, b=now, autojunk=False)
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
        "system_changed": codec.system_prompt(theirs.config) != codec.system_prompt(mine.config),
    }
    return tags, summary


def _request(call: CallRecord, tags: list[str]) -> dict[str, Any]:
    codec = codec_named(call.protocol)
    history = codec.history(call.context) if codec else None
    if codec is None or history is None:
        return {"raw": call.context}
    return {
        "items": [
            {"tag": tags[i] if i < len(tags) else "new", "value": item}
            for i, item in enumerate(history.items)
        ],
        "system": codec.system_prompt(history.config),
        "tools": history.tools,
        "config": {k: v for k, v in history.config.items() if k != codec.system_field},
    }


def _tool(tool_id: str | None, name: str | None, result: tuple[str, Any] | None) -> dict[str, Any]:
    """A tool call of an output and, when a later input carried it, its result."""
    return {
        "id": tool_id,
        "name": name,
        "result_in": result[0] if result else None,
        "result": result[1] if result else None,
    }


def _call(
    call: CallRecord,
    origin: float,
    previous: CallRecord | None,
    answered: dict[str, tuple[str, Any]],
) -> dict[str, Any]:
    tags, diff = _diff(call, previous)
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
        "request": _request(call, tags),
        "diff": diff,
        "output": call.output,
        "output_complete": call.output_complete,
        "provider_error": call.provider_error,
        "tool_calls": [
            _tool(t.ref or t.id, t.name, answered.get(t.id or t.ref or ""))
            for t in call.tool_refs.emitted
        ],
    }


def _links(capture: Capture) -> dict[str, list[dict[str, Any]]]:
    """Each child participant's relations as the page lists them, from one pass."""
    links: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in capture.relations:
        if r.child_participant_id is None:
            continue
        links[r.child_participant_id].append(
            {
                "relation_id": r.relation_id,
                "type": r.type,
                "status": r.status,
                "source_call_id": r.source_call_id,
                "target_call_id": r.target_call_id,
                "tool_call_id": r.tool_call_id,
                "evidence": [e.model_dump() for e in r.evidence],
                "note": r.note,
            }
        )
    return links


def _participant(p: ParticipantRecord, links: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        **participant_summary(p),  # the fields the terminal tree shows, then the page's own
        "parent_participant_id": p.parent_participant_id,
        "call_ids": list(p.call_ids),
        "evidence": [e.model_dump() for e in p.evidence],
        "links": links.get(p.participant_id, []),
    }


def _roll_up(participants: list[dict[str, Any]], calls: dict[str, dict[str, Any]]) -> None:
    for p in participants:
        mine = [calls[c] for c in p["call_ids"] if c in calls]
        p["tokens"] = {
            "input": sum(c["input_tokens"] or 0 for c in mine),
            "output": sum(c["output_tokens"] or 0 for c in mine),
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


def page_data(capture: Capture) -> dict[str, Any]:
    """Everything the viewer shows of one attempt (module docstring)."""
    ordered = sorted(capture.calls, key=lambda c: c.sequence)
    first = ordered[0].request.received_at if ordered else capture.manifest.started_at
    origin = datetime.fromisoformat(first.replace("Z", "+00:00")).timestamp() * 1000
    answered: dict[str, tuple[str, Any]] = {}  # tool-call id -> (call whose input had it, content)
    for call in ordered:
        codec = codec_named(call.protocol)
        view = codec.chat.request(call.context) if codec else None
        for message in view.plain() if view else []:
            if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
                answered.setdefault(message["tool_call_id"], (call.call_id, message.get("content")))
    last: dict[str, CallRecord] = {}  # participant -> its previous generation call
    calls: dict[str, dict[str, Any]] = {}
    for call in ordered:
        previous = last.get(call.participant_id or "") if call.kind == "generation" else None
        calls[call.call_id] = _call(call, origin, previous, answered)
        if call.participant_id and call.kind == "generation":
            last[call.participant_id] = call
    links = _links(capture)
    participants = [_participant(p, links) for p in capture.manifest.participants]
    _roll_up(participants, calls)
    tree = build_tree(capture)
    data = {
        "attempt_dir": str(capture.paths.root),
        "summary": tree["summary"],
        "participants": participants,
        "calls": calls,
        "order": [c.call_id for c in ordered],
        "relations": [r.model_dump(by_alias=True, mode="json") for r in capture.relations],
        "capture_errors": [e.model_dump() for e in capture.manifest.capture_errors],
    }
    elided, count = elide(data)
    elided["summary"]["elided_blobs"] = count
    return dict(elided)

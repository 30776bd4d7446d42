"""Recognizing input the harness injected, by the harness's own wrapper.

Some input items of a root call were not written by a person: a harness delivers a
background child's completion, or its own reminders, as input. The main trajectory keeps
them verbatim as the input items they were and tags them; this module finds them.

Rules:
- Recognition is by the wrappers the declared harness puts around them, declared as data
  in its package (`roller.harnesses.wrappers.InjectionWrappers`, the shapes documented
  there) — never by guessing from free text, and only for the harness that uses that
  wrapper (a harness declaring none injects nothing).
- Only top-level parts of input items are examined (a reminder nested inside a tool
  result belongs to the tool result); the first declared part shape that matches a part
  wins.
- A notification is bound to the root's established `result_delivered` relations that
  deliver into the call where the item first entered the trajectory, as its wrapper
  declares: by the tool-call id the wrapper names (`binds="tool_call_id"`), or — for a
  relation carrying no tool call, i.e. delivered by the notification itself — by the
  child participant whose native ids hold the agent the wrapper names (`binds="child"`).
  An unbound notification is still injected: the wrapper is the evidence, and
  `relation_ids` stays empty; one whose shape `bars_unbound` (OpenClaw's announce block)
  also bars the main trajectory (`unbound_barring`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from roller.capture.models import ParticipantRecord, RelationRecord
from roller.capture.trajectory_record import Injection, InjectionKind
from roller.harnesses import registry
from roller.harnesses.wrappers import (
    Binding,
    ElementPart,
    InjectionWrappers,
    MarkedPart,
    NotificationPart,
    PartShape,
)

# (kind, part index or None, wrapper, what it names, how it binds)
Found = tuple[InjectionKind, int | None, str, str | None, Binding | None]


def _parts(content: Any) -> list[tuple[int | None, str]]:
    """Top-level text parts of a content value: (part index or None for a string, text)."""
    if isinstance(content, str):
        return [(None, content)]
    if not isinstance(content, list):
        return []
    return [
        (i, part["text"])
        for i, part in enumerate(content)
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def _match(shape: PartShape, part: int | None, body: str) -> Found | None:
    if isinstance(shape, MarkedPart):
        marked = shape.marker.match(body)
        if marked is None:
            return None
        named = shape.names.search(body)
        return (shape.kind, part, marked.group(0), named.group(1) if named else None, shape.binds)
    if isinstance(shape, NotificationPart):
        opening = next((o for o in shape.openings if body.startswith(o)), None)
        if opening is None:
            return None
        inner = body.removesuffix(shape.trailer).rstrip() if shape.trailer else body
        if shape.element[0] in inner and inner.endswith(shape.element[1]):
            match = shape.names.search(inner)
            return (shape.kind, part, opening, match.group(1) if match else None, shape.binds)
        return None
    if body.startswith(shape.open) and body.endswith(shape.close):
        return (shape.kind, part, shape.open, _element_names(shape, body), shape.binds)
    return None


def _element_names(shape: ElementPart, body: str) -> str | None:
    if shape.names_key is None:
        return None
    try:
        data = json.loads(body[len(shape.open) : -len(shape.close)])
    except (ValueError, RecursionError):
        return None
    value = data.get(shape.names_key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def recognize(wrappers: InjectionWrappers, item: Any) -> list[Found]:
    """The injections one input item carries, by the harness's declared wrappers."""
    if not isinstance(item, dict):
        return []
    for typed in wrappers.items:
        if item.get("type") == typed.item_type:
            names = item.get(typed.names_field)
            names = names if isinstance(names, str) else None
            return [(typed.kind, None, typed.item_type, names, typed.binds)]
    kind = wrappers.message_type
    if kind is not None and item.get("type", kind) != kind:
        return []
    if item.get("role") not in wrappers.roles:
        return []
    found: list[Found] = []
    for part, text in _parts(item.get("content")):
        body = text.strip()
        for shape in wrappers.parts:
            hit = _match(shape, part, body)
            if hit is not None:
                found.append(hit)
                break
    return found


def _part_count(item: Any) -> int | None:
    """How many content parts the item has (None: the item is not split into parts)."""
    if isinstance(item, dict) and isinstance(item.get("content"), list):
        return len(item["content"])
    return None


def injections_of(
    harness: str,
    item: Any,
    call_id: str,
    root_id: str,
    relations: Callable[[], Sequence[RelationRecord]],
    participants: dict[str, ParticipantRecord],
) -> tuple[bool, list[Injection]]:
    """(whether the whole item was injected, its injected parts) for one input item;
    `relations()` gives the capture's relations (at least its `result_delivered` ones),
    asked only when an injection is to be bound."""
    declared = registry().get(harness)
    if declared is None:
        return False, []
    out = [
        Injection(
            kind=kind,
            part=part,
            wrapper=wrapper,
            names=names,
            relation_ids=_binding(binds, names, call_id, root_id, relations, participants),
        )
        for kind, part, wrapper, names, binds in recognize(declared.injections, item)
    ]
    parts = _part_count(item)
    whole = bool(out) and (
        any(i.part is None for i in out) or (parts is not None and len(out) == parts)
    )
    return whole, out


def unbound_barring(harness: str, injections: Sequence[Injection]) -> list[Injection]:
    """The injections that bound to no delivered result although their declared shape
    bars the main trajectory when unbound."""
    declared = registry().get(harness)
    if declared is None:
        return []
    barring = {
        shape.kind
        for shape in declared.injections.parts
        if isinstance(shape, MarkedPart) and shape.bars_unbound
    }
    return [i for i in injections if i.kind in barring and not i.relation_ids]


def _binding(
    binds: Binding | None,
    names: str | None,
    call_id: str,
    root_id: str,
    relations: Callable[[], Sequence[RelationRecord]],
    participants: dict[str, ParticipantRecord],
) -> list[str]:
    if binds is None or names is None:
        return []
    out: list[str] = []
    for rel in relations():
        if (
            rel.type != "result_delivered"
            or rel.status != "established"
            or rel.parent_participant_id != root_id
            or rel.target_call_id != call_id
        ):
            continue
        if binds == "tool_call_id":
            bound = rel.tool_call_id == names
        else:
            # Delivered by the notification itself, not by a tool result (a wait tool may
            # deliver the same child into the same call with its own relation).
            child = participants.get(rel.child_participant_id or "")
            bound = (
                rel.tool_call_id is None
                and child is not None
                and names in child.native_ids.values()
            )
        if bound:
            out.append(rel.relation_id)
    return out

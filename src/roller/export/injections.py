"""Recognizing input the harness injected, by the harness's own wrapper.

Some input items of a root call were not written by a person: a harness delivers a
background child's completion, or its own reminders, as input. The main trajectory keeps
them verbatim as the input items they were and tags them; this module finds them.

Rules:
- Recognition is by the wrapper the harness puts around them, per harness — never by
  guessing from free text, and only for the harness that uses that wrapper:
  - Claude Code: a text part of a `user` or `system` message holding a whole
    `<task-notification>…</task-notification>` element and opening with one of Claude
    Code's wrappers — `<system-reminder>` (a new turn, `user` message),
    `[SYSTEM NOTIFICATION - NOT USER INPUT]` (delivered mid-turn, `system` message,
    2.1.332) or the element itself — is a `task_notification` naming its
    `<tool-use-id>`; any other part that is a whole `<system-reminder>…</system-reminder>`
    is a `system_reminder`.
  - Codex: a user message whose text is a whole
    `<subagent_notification>{json}</subagent_notification>` (v1, naming `agent_path`),
    and any `agent_message` input item (v2, naming its `author`).
- Only top-level parts of input items are examined (a reminder nested inside a tool
  result belongs to the tool result).
- A notification is bound to the root's established `result_delivered` relations that deliver
  into the call where the item first entered the trajectory: by the tool-call id the
  wrapper names (Claude Code), or — for a relation carrying no tool call, i.e. delivered
  by the notification itself — by the child participant whose native ids hold the agent
  the wrapper names (Codex). An unbound notification is
  still injected: the wrapper is the evidence, and `relation_ids` stays empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from roller.capture.models import ParticipantRecord, RelationRecord
from roller.capture.trajectory_record import Injection, InjectionKind

_REMINDER = ("<system-reminder>", "</system-reminder>")
_TASK_NOTIFICATION = ("<task-notification>", "</task-notification>")
_NOTIFICATION_BANNER = "[SYSTEM NOTIFICATION - NOT USER INPUT]"
_CLAUDE_CODE_OPENINGS = (_REMINDER[0], _NOTIFICATION_BANNER, _TASK_NOTIFICATION[0])
_TOOL_USE_ID = re.compile(r"<tool-use-id>\s*([^<\s]+)\s*</tool-use-id>")
_SUBAGENT = ("<subagent_notification>", "</subagent_notification>")

# (kind, part index or None, wrapper, what it names)
Found = tuple[InjectionKind, int | None, str, str | None]


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


def _claude_code(item: Any) -> list[Found]:
    if not isinstance(item, dict) or item.get("role") not in ("user", "system"):
        return []
    found: list[Found] = []
    for part, text in _parts(item.get("content")):
        body = text.strip()
        opening = next((o for o in _CLAUDE_CODE_OPENINGS if body.startswith(o)), None)
        if opening is None:
            continue
        inner = body.removesuffix(_REMINDER[1]).rstrip()
        if _TASK_NOTIFICATION[0] in inner and inner.endswith(_TASK_NOTIFICATION[1]):
            match = _TOOL_USE_ID.search(inner)
            found.append(("task_notification", part, opening, match.group(1) if match else None))
        elif opening == _REMINDER[0] and body.endswith(_REMINDER[1]):
            found.append(("system_reminder", part, opening, None))
    return found


def _codex(item: Any) -> list[Found]:
    if not isinstance(item, dict):
        return []
    if item.get("type") == "agent_message":
        author = item.get("author")
        return [
            ("agent_message", None, "agent_message", author if isinstance(author, str) else None)
        ]
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return []
    found: list[Found] = []
    for part, text in _parts(item.get("content")):
        body = text.strip()
        if body.startswith(_SUBAGENT[0]) and body.endswith(_SUBAGENT[1]):
            names: str | None = None
            try:
                data = json.loads(body[len(_SUBAGENT[0]) : -len(_SUBAGENT[1])])
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("agent_path"), str):
                names = data["agent_path"]
            found.append(("subagent_notification", part, _SUBAGENT[0], names))
    return found


RECOGNIZERS: dict[str, Callable[[Any], list[Found]]] = {
    "claude-code": _claude_code,
    "codex": _codex,
}


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
    relations: Sequence[RelationRecord],
    participants: dict[str, ParticipantRecord],
) -> tuple[bool, list[Injection]]:
    """(whether the whole item was injected, its injected parts) for one input item."""
    recognize = RECOGNIZERS.get(harness)
    if recognize is None:
        return False, []
    found = recognize(item)
    out = [
        Injection(
            kind=kind,
            part=part,
            wrapper=wrapper,
            names=names,
            relation_ids=_binding(kind, names, call_id, root_id, relations, participants),
        )
        for kind, part, wrapper, names in found
    ]
    parts = _part_count(item)
    whole = bool(out) and (
        any(i.part is None for i in out) or (parts is not None and len(out) == parts)
    )
    return whole, out


def _binding(
    kind: InjectionKind,
    names: str | None,
    call_id: str,
    root_id: str,
    relations: Sequence[RelationRecord],
    participants: dict[str, ParticipantRecord],
) -> list[str]:
    if kind == "system_reminder" or names is None:
        return []
    out: list[str] = []
    for rel in relations:
        if (
            rel.type != "result_delivered"
            or rel.status != "established"
            or rel.parent_participant_id != root_id
            or rel.target_call_id != call_id
        ):
            continue
        if kind == "task_notification":
            bound = rel.tool_call_id == names
        else:
            # Delivered by the notification itself, not by a tool result (Codex wait_agent
            # delivers the same child into the same call with its own relation).
            child = participants.get(rel.child_participant_id or "")
            bound = (
                rel.tool_call_id is None
                and child is not None
                and names in child.native_ids.values()
            )
        if bound:
            out.append(rel.relation_id)
    return out

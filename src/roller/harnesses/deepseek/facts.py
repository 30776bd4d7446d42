"""One DeepSeek Harness session log read into the facts `deepseek.native` joins: its own
events (a fork's copied prefix left out), assistant count and tool-call ids, accepted
requests, spawns and refused spawns, settled notices, the last turn's end.

Checked against deepseek-harness 0.2.1rc2 (`deepseek.sessions` gives the files and
fields; `deepseek.native`'s docstring the rules these facts serve):
- a spawn is a `subagent`/`subagent_fork` `tool/call` whose `tool/result` says `started
  subagent <id>` for exactly one child the log's `subagent/catalog` lists; any other
  result (an error, no child named) is a refused spawn, kept as a note;
- a notice is a `user/message` whose `source.kind` is `subagent-settled`, from its
  `senderSessionId`, with its first text;
- an accepted request is a `session-log-deepseek/delivery-accepted` event for this
  session, by its `throughSeq`;
- a seeded log's copied events end at `session/end-seed {inherited: true}`; a resumed
  session's `session/end-seed {}` ends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from roller.harnesses.base import NativeEvidence
from roller.harnesses.deepseek.sessions import Event, SessionLog

SPAWN_TOOLS: Final = frozenset({"subagent", "subagent_fork"})
SETTLED: Final = "subagent-settled"
DELIVERED: Final = "session-log-deepseek/delivery-accepted"
# Native message events -> the Anthropic role their wire message has.
_ROLES: Mapping[str, str] = {
    "user/message": "user",
    "tool/result": "user",
    "assistant/message": "assistant",
}


@dataclass(frozen=True)
class Spawn:
    tool_call_id: str
    child: str
    evidence: tuple[NativeEvidence, ...]


@dataclass(frozen=True)
class Facts:
    """One session log, read into what the facts need (own events only)."""

    log: SessionLog
    seed_end: int | None  # seq of `session/end-seed` (a fork's copied events are before it)
    assistant: int
    tool_ids: frozenset[str]
    runs: tuple[int, ...]  # own accepted requests' throughSeq, ascending
    spawns: tuple[Spawn, ...]
    refused: tuple[str, ...]  # notes on spawn calls that created no child
    notices: Mapping[str, tuple[int, str]]  # child -> (seq, the notice's first text)
    last_end: str | None  # the last turn/end reason kind; None while a turn is open
    provider: str | None  # subagent/descriptor provider (spawn, fork)


def event_evidence(log: SessionLog, event: Event | None = None) -> NativeEvidence:
    return NativeEvidence(path=log.path, ref=None if event is None else f"seq {event.seq}")


def _message(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """An event's `data.message` (assistant messages, tool results), else `data` itself
    (user messages carry their content at the top)."""
    message = data.get("message")
    return message if isinstance(message, dict) else data


def _texts(data: Mapping[str, Any]) -> list[str]:
    content = _message(data).get("content")
    if not isinstance(content, list):
        return []
    return [str(c.get("text")) for c in content if isinstance(c, dict) and c.get("type") == "text"]


def _tool_ids(data: Mapping[str, Any]) -> set[str]:
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return {
        c["id"]
        for c in content or []
        if isinstance(c, dict) and c.get("type") == "tool-call" and isinstance(c.get("id"), str)
    }


def _spawns(log: SessionLog, own: Sequence[Event]) -> tuple[list[Spawn], list[str]]:
    calls = [
        e
        for e in own
        if e.type == "tool/call" and e.data.get("name") in SPAWN_TOOLS and e.data.get("callId")
    ]
    catalog = {e.data.get("childId"): e for e in own if e.type == "subagent/catalog"}
    results = {_message(e.data).get("toolCallId"): e for e in own if e.type == "tool/result"}
    spawns: list[Spawn] = []
    refused: list[str] = []
    for call in calls:
        tid = str(call.data["callId"])
        result = results.get(tid)
        text = " ".join(_texts(result.data)) if result is not None else ""
        named = [c for c in catalog if isinstance(c, str) and c in text.split()]
        if result is None or _message(result.data).get("isError") is True or len(named) != 1:
            shown = text[:160] or "no result"
            refused.append(
                f"session {log.id}: {call.data['name']} call {tid} created no child ({shown})"
            )
            continue
        evidence = (
            event_evidence(log, call),
            event_evidence(log, catalog[named[0]]),
            event_evidence(log, result),
        )
        spawns.append(Spawn(tid, named[0], evidence))
    return spawns, refused


def _notices(own: Sequence[Event]) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for e in own:
        source = e.data.get("source")
        if e.type != "user/message" or not isinstance(source, dict):
            continue
        sender = source.get("senderSessionId")
        texts = _texts(e.data)
        if source.get("kind") == SETTLED and isinstance(sender, str) and texts:
            out.setdefault(sender, (e.seq, texts[0]))
    return out


def _last_end(own: Sequence[Event]) -> str | None:
    kind: str | None = None
    for e in own:
        if e.type == "turn/start":
            kind = None
        elif e.type == "turn/end":
            reason = e.data.get("reason")
            kind = str(reason.get("kind")) if isinstance(reason, dict) else "unknown"
    return kind


def facts_of(log: SessionLog) -> Facts:
    # A resumed session also marks where its restored history ends (`session/end-seed {}`);
    # only a seeded log's `{inherited: true}` marker ends copied events.
    seed_end = next(
        (
            e.seq
            for e in log.events
            if log.seeded and e.type == "session/end-seed" and e.data.get("inherited") is True
        ),
        None,
    )
    own = [e for e in log.events if seed_end is None or e.seq > seed_end]
    answers = [e for e in own if e.type == "assistant/message"]
    spawns, refused = _spawns(log, own)
    descriptor = next((e for e in own if e.type == "subagent/descriptor"), None)
    return Facts(
        log=log,
        seed_end=seed_end,
        assistant=len(answers),
        tool_ids=frozenset(t for e in answers for t in _tool_ids(e.data)),
        runs=tuple(
            sorted(
                e.data["throughSeq"]
                for e in own
                if e.type == DELIVERED
                and e.data.get("sessionId") == log.id
                and type(e.data.get("throughSeq")) is int
            )
        ),
        spawns=tuple(spawns),
        refused=tuple(refused),
        notices=_notices(own),
        last_end=_last_end(own),
        provider=str(descriptor.data.get("provider")) if descriptor is not None else None,
    )


def inherited_items(log: SessionLog, seed_end: int) -> int:
    """The wire messages a fork's copied events make: runs of one role."""
    roles = [_ROLES[e.type] for e in log.events if e.seq < seed_end and e.type in _ROLES]
    return sum(1 for i, role in enumerate(roles) if i == 0 or roles[i - 1] != role)

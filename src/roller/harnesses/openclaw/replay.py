"""The tool-call ids OpenClaw sends back in later requests, by its own rule.

OpenClaw replays a transcript to the provider through a per-API replay policy (2026.9.6,
dist `tool-call-id-*.mjs` `sanitizeToolCallId`, `provider-replay-helpers-*.mjs`, and
measured): for Chat Completions (`openai-completions`) and Messages
(`anthropic-messages`) every tool-call id is rewritten in "strict" mode — every character
outside `[A-Za-z0-9]` removed, at most 40 kept (`call_probe_1` -> `callprobe1`,
`toolu_01A_b` -> `toolu01Ab`) — while Responses keeps the provider's ids. The native
transcript keeps the provider's id (what the output carried). Two ids of one session
that would rewrite to the same id get a hash suffix OpenClaw derives from its replay
order, which roller does not reproduce: such ids are left out (a `duplicate_id`
problem) and their results are not matched, never matched to the wrong call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from roller.harnesses.base import NativeProblem
from roller.harnesses.openclaw.store import Event

REWRITING_APIS = frozenset({"openai-completions", "anthropic-messages"})
_NOT_STRICT = re.compile(r"[^A-Za-z0-9]")
_MAX_LEN = 40


def strict_id(tool_call_id: str) -> str:
    return _NOT_STRICT.sub("", tool_call_id)[:_MAX_LEN] or "sanitizedtoolid"


def replayed_ids(
    events: Iterable[tuple[str, Event]], problems: list[NativeProblem]
) -> dict[str, str]:
    """Output tool-call id -> the id later requests carry, for the rewriting APIs."""
    by_session: dict[str, dict[str, set[str]]] = {}
    for key, e in events:
        if e.api not in REWRITING_APIS:
            continue
        rewritten = by_session.setdefault(key, {})
        for call in e.tool_calls:
            rewritten.setdefault(strict_id(call.id), set()).add(call.id)
    out: dict[str, str] = {}
    for key, rewritten in by_session.items():
        for new, olds in rewritten.items():
            if len(olds) > 1:
                problems.append(
                    NativeProblem(
                        "duplicate_id",
                        f"tool calls {sorted(olds)} would all be replayed as {new}: OpenClaw "
                        "then suffixes a hash roller cannot reproduce, so none is mapped",
                        f"session {key}",
                    )
                )
                continue
            (old,) = olds
            if old != new:
                out[old] = new
    return out

"""What OpenClaw's secret masking does to a run id it stores, and the full id behind it.

Facts relied on (OpenClaw 2026.9.6: `dist/redact-*.mjs`, `dist/transcript-redact-*.mjs`,
read 2026-12-06, and a real run of the `identical-prompts` acceptance scenario):
- Every assistant and tool-result message is redacted before it is stored, its
  `__openclaw.runId` included. Of the default patterns, the one for a Telegram bot
  token, `\\b(\\d{6,}:[A-Za-z0-9_-]{20,})\\b`, matches an announce run id
  `announce:v1:<child session key>:<child run id>` whenever the child session's UUID
  ends in twelve digits (about one child in 280): the match, `<digits>:<run id>`, is
  masked to its first 6 characters, `…` and its last 4 (a match under 18 characters
  to `***`). So `…-723659216394:7ad09f6a-…-2bd76a186e77` is stored as `…-723659…6e77`.
- The masking is deterministic, and the state store names every child's runs
  (`subagent_runs`, `task_runs`): a stored id is read back by masking each known
  announce id the same way, and is the one id whose masked form it is — when exactly
  one is. No other pattern is undone: an id masked otherwise stays as stored and binds
  nothing.
`unmask_runs(store)` is the store with each such event's `run_id` read back (the stored
form kept as `stored_run_id`), so every reader after it sees the run OpenClaw meant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from roller.harnesses.openclaw.delegation import ANNOUNCE_PREFIX
from roller.harnesses.openclaw.store import Store

# JavaScript's `\b` and `\d` without the `u` flag are ASCII-only, as here.
_TOKEN_LIKE: Final = re.compile(r"\b(\d{6,}:[A-Za-z0-9_-]{20,})\b", re.ASCII)


def masked(text: str) -> str:
    """`text` as OpenClaw's token masking stores it."""
    return _TOKEN_LIKE.sub(_mask, text)


def _mask(match: re.Match[str]) -> str:
    token = match[1]
    return "***" if len(token) < 18 else f"{token[:6]}…{token[-4:]}"


def unmasked(known: Iterable[str]) -> dict[str, str]:
    """Masked form -> the one id of `known` stored in that form, for each id the masking
    changes; a form two known ids share is left out (it names neither)."""
    by_form: dict[str, set[str]] = {}
    for full in known:
        form = masked(full)
        if form != full:
            by_form.setdefault(form, set()).add(full)
    return {form: next(iter(ids)) for form, ids in by_form.items() if len(ids) == 1}


def unmask_runs(store: Store) -> Store:
    """`store` with the run ids of its events that OpenClaw stored masked read back."""
    known: set[tuple[str | None, str | None]]
    known = {(r.child_key, i) for r in store.subagent_runs for i in (r.run_id, r.task_run_id)}
    known |= {(t.child_key, t.run_id) for t in store.task_runs if t.runtime == "subagent"}
    forms = unmasked(f"{ANNOUNCE_PREFIX}{key}:{run}" for key, run in known if key and run)
    if not forms:
        return store
    events = tuple(
        replace(e, run_id=forms[e.run_id], stored_run_id=e.run_id)
        if e.run_id is not None and e.run_id in forms
        else e
        for e in store.events
    )
    return replace(store, events=events)

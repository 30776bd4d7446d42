"""The in-process cache of resolved session plans: a known session costs no store trip.

`ResolutionCache.get(plan)` answers a plan the store already resolved; `put(plan,
resolution)` keeps what the store answered. Facts it relies on
(`roller.gateway.store.lineage`, `roller.gateway.store.repository`):
- A parent is set once and never rewritten, so a resolution of a named row with a parent
  and no refusal never changes: replaying it in the store would only touch `last_seen_at`
  (the row exists, its role is set or stays, the parent claim is already satisfied and a
  satisfied claim is not audited). It is kept until evicted; the caller touches
  `last_seen_at` when `get` says a touch is due, at most once per `touch_interval`.
- A named row without a parent may still be given one (by a request naming it as a
  child, in this process or another sharing the database), and nothing else of its
  resolution can change (one row per key, its role set once). Its answer is kept too,
  and every `ttl` (at most the touch interval and a quarter of the inactivity window)
  `get` says a refresh is due: the caller touches the row through the writer, whose
  batch reads the row's parent back (`refreshed`), so a parent set elsewhere shows on
  this process's answers up to a `ttl` and one batch late — without a store trip of
  its own on the request path.
- A source-keyed row closes after inactivity, so its answer is kept for `ttl` only: the
  next request after that goes to the store, which touches the row, closes and opens
  generations exactly as before. When this process learns that a row got a parent, its
  answers that said none are dropped.
- A refused parent claim is never cached: every such claim is audited with its request.
- The store still creates every row before the request is forwarded (the first request
  of a plan always goes to the store), so child-before-parent visibility is unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

from roller.gateway.config import Client
from roller.gateway.derivation import SessionPlan, SourceKey
from roller.gateway.store import Resolution

TOUCH_INTERVAL_S: Final = 1.0
CAPACITY: Final = 100_000  # plans kept; the oldest goes first

_Row = tuple[Client, SourceKey | None]
_K = TypeVar("_K")


@dataclass(frozen=True, slots=True)
class Hit:
    resolution: Resolution
    touch_due: bool  # the caller should write `last_seen_at` now (and read the parent back)


@dataclass(slots=True)
class _Entry:
    resolution: Resolution
    expires: float | None  # monotonic seconds; None: never (a lasting resolution)
    touched: float  # when `last_seen_at` was last written for it
    # Its two answers, made once (`get` runs on every request).
    quiet: Hit = field(init=False)
    due: Hit = field(init=False)

    def __post_init__(self) -> None:
        self.quiet = Hit(self.resolution, touch_due=False)
        self.due = Hit(self.resolution, touch_due=True)


def lasting(plan: SessionPlan, resolution: Resolution) -> bool:
    """Whether the store's answer for `plan` can never change (see the module docstring)."""
    return (
        plan.own is not None
        and resolution.parent_session_id is not None
        and resolution.parent_refused is None
    )


class ResolutionCache:
    def __init__(
        self,
        *,
        inactivity_seconds: float,
        touch_interval: float = TOUCH_INTERVAL_S,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = min(touch_interval, inactivity_seconds / 4)
        self.touch_interval = touch_interval
        self.capacity = capacity
        self.clock = clock
        self._entries: dict[SessionPlan, _Entry] = {}
        self._by_row: dict[_Row, set[SessionPlan]] = {}
        self._by_session: dict[str, set[SessionPlan]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, plan: SessionPlan) -> Hit | None:
        entry = self._entries.get(plan)
        if entry is None:
            return None
        now = self.clock()
        if entry.expires is not None:
            if now < entry.expires:
                return entry.quiet  # touched not long ago
            if plan.own is None:  # a source-keyed row: the store decides its generation
                self._drop(plan)
                return None
            entry.expires = now + self.ttl  # a named row: refreshed through the writer
            return entry.due
        due = now - entry.touched >= self.touch_interval
        if due:
            entry.touched = now
        return entry.due if due else entry.quiet

    def refreshed(self, session_id: str, parent_session_id: str | None) -> None:
        """The store says `session_id`'s parent is now `parent_session_id` (read back by
        a touch): answers of that row that said no parent take it (and then last)."""
        if parent_session_id is None:
            return
        for plan in list(self._by_session.get(session_id, ())):
            entry = self._entries[plan]
            if entry.resolution.parent_session_id is None:  # (its session, by the index)
                resolution = replace(entry.resolution, parent_session_id=parent_session_id)
                self.put(plan, resolution)

    def put(self, plan: SessionPlan, resolution: Resolution) -> None:
        """Keep the store's answer for `plan` (it just touched the row)."""
        now = self.clock()
        row = (plan.client, plan.own)
        if resolution.parent_session_id is not None:
            # The row has a parent now: answers that said otherwise are stale.
            for other in list(self._by_row.get(row, ())):
                stale = self._entries[other]
                if stale.resolution.parent_session_id is None:
                    self._drop(other)
        if resolution.parent_refused is not None:
            self._drop(plan)
            return
        expires = None if lasting(plan, resolution) else now + self.ttl
        self._drop(plan)  # a source-keyed plan's row changes between generations
        if len(self._entries) >= self.capacity:
            self._drop(next(iter(self._entries)))
        self._entries[plan] = _Entry(resolution, expires, now)
        self._by_row.setdefault(row, set()).add(plan)
        self._by_session.setdefault(resolution.session_id, set()).add(plan)

    def _drop(self, plan: SessionPlan) -> None:
        entry = self._entries.pop(plan, None)
        if entry is None:
            return
        _unindex(self._by_row, (plan.client, plan.own), plan)
        _unindex(self._by_session, entry.resolution.session_id, plan)


def _unindex(index: dict[_K, set[SessionPlan]], key: _K, plan: SessionPlan) -> None:
    plans = index.get(key)
    if plans is not None:
        plans.discard(plan)
        if not plans:
            del index[key]

"""Where a finalize is, for a display: its phase, and the calls done of the total.

`finalize_attempt(…, progress=report)` calls `report(Step(…))` as it goes: `index` as it
starts indexing the tape, `decode` during the first pass and `write` while calls.jsonl
is written (each every `EVERY` calls, and at the last), `publish` before the manifest.
Nothing is reported without a reporter; with one, a report costs a call per `EVERY`
calls. What is reported is never part of what is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

Phase = Literal["index", "decode", "write", "publish"]
EVERY: Final = 500  # calls between two reports of a counted phase

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Step:
    """A finalize's phase, and for `decode` and `write` the calls done of `total`."""

    phase: Phase
    done: int = 0
    total: int = 0


Reporter = Callable[[Step], None]


def counted(items: Iterable[_T], phase: Phase, total: int, report: Reporter) -> Iterator[_T]:
    """`items`, one per call, reported as `phase` every `EVERY` of them and at the last."""
    done = 0
    report(Step(phase, 0, total))
    for item in items:
        yield item
        done += 1
        if done % EVERY == 0:
            report(Step(phase, done, total))
    if done % EVERY:
        report(Step(phase, done, total))

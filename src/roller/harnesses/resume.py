"""Confirming the conversation a later turn resumes: the rule every resumable adapter shares.

A later turn (`roller collect --prompt A --prompt B`) continues the root conversation of
the turns before it. Which conversation that is, is read from the native logs the
harness wrote, never taken from "the most recent session" and never guessed:
- the logs must name exactly one root participant (none: the harness wrote nothing or
  crashed; several: it started a second conversation instead of resuming);
- they must have no native problem: logs that disagree with themselves confirm nothing;
- the id must have the harness's own id shape (`confirmed_id`), so a value that could be
  read as a flag or a path never reaches an argv.
Each adapter decides only which native id of that root its resume flag takes.
"""

from __future__ import annotations

import re

from roller.errors import HarnessError, UsageError
from roller.harnesses.base import NativeCapture, NativeParticipant


def confirmed_root_participant(harness: str, native: NativeCapture | None) -> NativeParticipant:
    """The one root participant of native logs without problems, else `HarnessError`."""
    if native is None:
        raise HarnessError(f"{harness}: no native logs, so no root conversation to resume")
    roots = [p for p in native.participants if p.role == "root"]
    if len(roots) != 1:
        raise HarnessError(
            f"{harness}: {len(roots)} root conversations in the native logs, cannot resume"
        )
    if native.problems:
        raise HarnessError(
            f"{harness}: the native logs disagree, the root conversation is not confirmed: "
            + "; ".join(str(p) for p in native.problems[:3])
        )
    return roots[0]


def confirmed_id(harness: str, what: str, value: str | None, shape: re.Pattern[str]) -> str:
    """`value` when it has the harness's id shape; `HarnessError` otherwise."""
    if value is None or not shape.fullmatch(value):
        raise HarnessError(f"{harness}: the root's {what} {value!r} is not a {what}")
    return value


def resume_id(harness: str, what: str, value: str, shape: re.Pattern[str]) -> str:
    """An id given to `resume_plan`: it must have the id shape (a usage error otherwise)."""
    if not shape.fullmatch(value):
        raise UsageError(f"{harness}: {value!r} is not a {what}")
    return value

"""A long command's progress on a terminal: the phase it is in, what it counted, the time.

`shown_on(console)` gives a `Bar` for the length of a command: `bar.phase(label, total)`
starts a phase (the one before leaves the screen), `bar.count(done)` says how many of
its `total` calls are done (without a total: how many so far), `bar.counting(items)`
counts items as they pass. On a terminal (not `TERM=dumb`) rich draws one line, redrawn
at each phase, at a count asked to be drawn now (a phase's last), and otherwise at most
every `_REDRAW_S` (a redraw costs ~1 ms: drawn at every count, a 10k-call export would
spend 0.1 s on it), gone once the command ends; elsewhere (a pipe, a log, CI) every
method does nothing, so the command's own output stands alone.
roller collect has its own display (`roller.cli.progress`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

_T = TypeVar("_T")
_EVERY = 100  # items counted between two counts told to the bar
_REDRAW_S = 0.1  # seconds between two redraws of a count


class _Calls(ProgressColumn):
    """The calls done (of the total, when the phase has one)."""

    def render(self, task: Task) -> Text:
        done = int(task.completed)
        if task.total is not None:
            return Text(f"{done:,}/{int(task.total):,} calls", style="green")
        return Text(f"{done:,} calls" if done else "", style="green")


class Bar:
    """What a command tells its display (nothing is drawn without a `Progress`)."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._task: TaskID | None = None
        self._label: str | None = None
        self._due = 0.0  # when a count is drawn again

    def phase(self, label: str, total: int | None = None) -> None:
        """Start the phase `label` (already on: nothing changes)."""
        if self._progress is None or label == self._label:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task, self._label = self._progress.add_task(label, total=total), label
        self._progress.refresh()

    def count(self, done: int, *, now: bool = False) -> None:
        """`done` calls so far in the phase; drawn at once with `now`."""
        if self._progress is None or self._task is None:
            return
        drawn = now or time.monotonic() >= self._due
        self._progress.update(self._task, completed=done, refresh=drawn)
        if drawn:
            self._due = time.monotonic() + _REDRAW_S

    def counting(self, items: Iterable[_T]) -> Iterator[_T]:
        """`items`, counted in the phase as they pass (redrawn every `_EVERY`)."""
        if self._progress is None:
            yield from items
            return
        done = 0
        for item in items:
            yield item
            done += 1
            if done % _EVERY == 0:
                self.count(done)
        self.count(done, now=True)


@contextmanager
def shown_on(console: Console, *, beside_stdout: bool = False) -> Iterator[Bar]:
    """A `Bar` drawing on `console` when it is a terminal (not dumb); else one that
    draws nothing. `beside_stdout`: the command writes its result on stdout, so nothing
    is drawn when stdout is a terminal too (the two would interleave)."""
    if beside_stdout and sys.stdout.isatty():
        yield Bar(None)
        return
    if not console.is_terminal or console.is_dumb_terminal:
        yield Bar(None)
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        _Calls(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield Bar(progress)

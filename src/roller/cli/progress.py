"""How `roller collect` shows a run of many samples: a live progress display on a
terminal, plain lines otherwise, and the summary table at the end.

On a terminal (stderr is a tty and not `TERM=dumb`): a rich `Live` region, redrawn four
times a second, with one line of counts — samples done / failed / running / waiting,
calls captured, elapsed time and ETA — and what each running sample is doing; each
sample's news (reused, an attempt judged) is printed above it and stays. Otherwise (a
pipe, a log file, CI): only the news, one plain line each, prefixed with the counts, and
nothing that moves the cursor.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from roller.capture.summary_record import RunSummary
from roller.collect.collection import Progress, RunEvent

_RUNNING_SHOWN = 8


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    s = int(seconds + 0.5)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


def counts(p: Progress, elapsed_s: float | None = None) -> str:
    elapsed = p.elapsed_s if elapsed_s is None else elapsed_s
    reused = f" ({p.reused} reused)" if p.reused else ""
    return (
        f"{p.succeeded + p.failed}/{p.total} done{reused} · {p.failed} failed · "
        f"{p.running} running · {p.waiting} waiting · {p.calls} calls captured · "
        f"{clock(elapsed)} elapsed · ETA {clock(p.eta_s)}"
    )


class RunDisplay:
    """Feed it every `RunEvent`; use it as a context manager around the run."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live_mode = console.is_terminal and not console.is_dumb_terminal
        self._progress: Progress | None = None
        self._status: dict[str, str] = {}
        self._started = time.monotonic()
        self._live: Live | None = None

    def __enter__(self) -> RunDisplay:
        if self.live_mode:
            self._live = Live(self, console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)

    def __call__(self, event: RunEvent) -> None:
        self._progress = event.progress
        if event.sample_id is not None:
            if event.status is not None:
                self._status[event.sample_id] = event.status
            else:
                self._status.pop(event.sample_id, None)  # no attempt of it is running
        if event.line is None:
            return
        if self.live_mode:
            self.console.print(Text(event.line))
        else:
            self.console.print(
                f"[{counts(event.progress)}] {event.line}",
                markup=False,
                highlight=False,
                soft_wrap=True,  # one event, one line, whatever the width
            )

    def __rich__(self) -> RenderableType:
        """The live region: the counts (elapsed recomputed at every redraw) and the
        running samples' statuses."""
        if self._progress is None:
            return Text("starting…")
        elapsed = time.monotonic() - self._started
        lines: list[RenderableType] = [Text(counts(self._progress, elapsed), style="bold")]
        running = list(self._status.items())
        for sid, status in running[:_RUNNING_SHOWN]:
            lines.append(Text(f"  {sid}: {status}", overflow="ellipsis", no_wrap=True))
        if len(running) > _RUNNING_SHOWN:
            lines.append(Text(f"  … {len(running) - _RUNNING_SHOWN} more running"))
        return Group(*lines)


def summary_table(summary: RunSummary) -> Table:
    table = Table(
        title=f"{summary.samples_total} sample(s), {summary.harness}", title_justify="left"
    )
    for name, justify in (
        ("sample", "left"), ("status", "left"), ("attempts", "right"), ("execution", "left"),
        ("capture", "left"), ("calls", "right"), ("exportable", "right"), ("wall", "right"),
    ):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in summary.samples:
        colour = {"succeeded": "green", "failed": "red", "not_run": "yellow"}[s.status]
        status = f"[{colour}]{s.status}[/]" + (" (reused)" if s.reused else "")
        table.add_row(
            s.sample_id, status, str(len(s.attempts)), s.execution_status or "-",
            s.capture_status or "-", str(s.calls), str(s.exportable_calls), clock(s.wall_s),
        )  # fmt: skip
    table.caption = (
        f"{summary.succeeded} succeeded · {summary.failed} failed · {summary.not_run} not run · "
        f"{summary.reused} reused · {summary.calls} calls ({summary.exportable_calls} "
        f"exportable) · {clock(summary.elapsed_s)} elapsed"
    )
    table.caption_justify = "left"
    return table

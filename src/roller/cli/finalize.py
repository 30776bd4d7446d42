"""`roller finalize ATTEMPT_DIR`: rebuild the formal files from raw/ (tape + native logs),
then the attempt's stored main trajectory (inside a run layout)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from roller.capture.layout import AttemptPaths
from roller.capture.models import STORAGE_LAYOUTS, StorageLayout
from roller.export.trajectory_file import write_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.finalize.progress import Phase, Reporter, Step

_SAID: dict[Phase, str] = {
    "index": "indexing the tape",
    "decode": "decoding calls",
    "write": "writing calls.jsonl",
    "publish": "publishing the manifest",
}


class _Calls(ProgressColumn):
    """The calls done of the total, for a counted phase (nothing for the others)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        return Text(f"{int(task.completed):,}/{int(task.total):,} calls", style="green")


@contextmanager
def shown(console: Console) -> Iterator[Reporter | None]:
    """On a terminal (not `TERM=dumb`), a reporter drawing finalize's progress on
    `console`, a bar that is gone once it ends; elsewhere (a pipe, a log, CI) None:
    nothing is drawn."""
    if not console.is_terminal or console.is_dumb_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description:<24}"),
        BarColumn(),
        _Calls(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        on_screen: list[tuple[Phase, TaskID]] = []  # the phase shown: one task a phase

        def report(step: Step) -> None:
            if not on_screen or on_screen[-1][0] != step.phase:
                if on_screen:
                    bar.remove_task(on_screen.pop()[1])
                total = step.total if step.phase in ("decode", "write") else None
                on_screen.append((step.phase, bar.add_task(_SAID[step.phase], total=total)))
            bar.update(on_screen[-1][1], completed=step.done, refresh=True)

        yield report


@click.command("finalize")
@click.argument("attempt_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--storage-layout",
    type=click.Choice(STORAGE_LAYOUTS),
    default=None,
    help="Publish in this layout (default: the one it is published in, else the one it "
    "was collected with: compact/v2 unless `roller collect --storage-layout` said so).",
)
def command(attempt_dir: Path, storage_layout: StorageLayout | None) -> None:
    """Re-finalize ATTEMPT_DIR from its tape and native logs under raw/.

    The result is byte-identical to the first finalization when raw/ is unchanged.
    Needs raw/ (kept with --capture-debug full, or on error under the default policy).
    Inside a run directory the attempt's main trajectory is rewritten as well.

    A capture of 2,000 calls or more is decoded by one process per CPU (at most 4),
    and its relations.jsonl is written by a child process while its calls.jsonl is.
    The other processes take their share of the calls once they started (for a tape
    of 128 MiB or more they start while the tape is indexed); ROLLER_FINALIZE_PROCESSES=N
    sets how many, and has them waited for, a minute at most (1: this process alone).
    The bytes written are the same either way.

    On a terminal, a progress bar shows what it is doing (indexing the tape, decoding
    the calls, writing calls.jsonl, publishing) and is gone once it is done.
    """
    paths = AttemptPaths(attempt_dir)
    with shown(Console(stderr=True)) as progress:
        manifest = finalize_attempt(paths, storage_layout, progress)
    click.echo(
        f"finalized {attempt_dir}: {manifest.counts.calls} calls, "
        f"{manifest.counts.relations} relations, capture {manifest.capture_status}"
    )
    trajectory, stored = write_trajectory(paths)
    if stored is not None:
        click.echo(f"main trajectory ({trajectory.export_status}) written to {stored}")

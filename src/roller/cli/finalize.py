"""`roller finalize ATTEMPT_DIR`: rebuild the formal files from raw/ (tape + native logs),
then the attempt's stored main trajectory (inside a run layout)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from roller.capture.layout import AttemptPaths
from roller.capture.models import STORAGE_LAYOUTS, StorageLayout
from roller.cli.bar import Bar, shown_on
from roller.collect.scratch import native_left, scratch_removed
from roller.export.trajectory_file import write_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.finalize.progress import Phase, Reporter, Step

_SAID: dict[Phase, str] = {
    "index": "indexing the tape",
    "decode": "decoding calls",
    "write": "writing calls.jsonl",
    "publish": "publishing the manifest",
}


def drawn(bar: Bar) -> Reporter:
    """Finalize's steps told to `bar`: a phase each, counted where they count calls."""

    def report(step: Step) -> None:
        bar.phase(_SAID[step.phase], step.total if step.phase in ("decode", "write") else None)
        bar.count(step.done, now=step.done == step.total)

    return report


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

    An attempt roller never published (it was killed, or failed while finalizing)
    first gets the native logs its harness left in the scratch HOME recorded in
    raw/scratch.json, when that is still there; once published, the scratch is
    removed: what `roller collect --resume` does with such an attempt.

    On a terminal, a progress bar shows what it is doing (indexing the tape, decoding
    the calls, writing calls.jsonl, publishing) and is gone once it is done.
    """
    paths = AttemptPaths(attempt_dir)
    unpublished = not paths.manifest.exists()  # (a kept scratch of a published one stays)
    scratch = native_left(paths) if unpublished else None
    with shown_on(Console(stderr=True)) as bar:
        manifest = finalize_attempt(paths, storage_layout, drawn(bar))
    click.echo(
        f"finalized {attempt_dir}: {manifest.counts.calls} calls, "
        f"{manifest.counts.relations} relations, capture {manifest.capture_status}"
    )
    trajectory, stored = write_trajectory(paths)
    if stored is not None:
        click.echo(f"main trajectory ({trajectory.export_status}) written to {stored}")
    if unpublished:
        scratch_removed(paths, scratch)

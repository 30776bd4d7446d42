"""`roller reproject SAMPLE_DIR --out COPY`: re-finalize a sample into a copy and validate
it; the original is never touched. Exit 0 when every attempt of the copy validates."""

from __future__ import annotations

from pathlib import Path

import click

from roller.collect.reproject import reproject


@click.command("reproject")
@click.argument("sample_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--out", required=True, type=click.Path(path_type=Path), help="The copy (must not exist)."
)
def command(sample_dir: Path, out: Path) -> int:
    """Re-project SAMPLE_DIR offline into the copy OUT.

    The sample directory is copied; in the copy, every attempt whose raw/ was retained is
    re-finalized from it, every attempt's main trajectory is derived again (root
    participant only), and every attempt is validated. Use it for a sample that
    `roller collect --resume` refuses because its main trajectory holds subagent steps.
    """
    results = reproject(sample_dir, out)
    for r in results:
        how = "re-finalized from raw/" if r.source == "raw" else "no raw/: formal files kept"
        state = "valid" if r.valid else "INVALID"
        click.echo(f"{r.attempt}: {how}, main trajectory re-derived, {state}")
        for problem in r.problems:
            click.echo(f"  - {problem}")
    click.echo(f"copy written to {out}; {sample_dir} untouched")
    return 0 if all(r.valid for r in results) else 1

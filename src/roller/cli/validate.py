"""`roller validate PATH`: check a capture's integrity. Exit 0 valid, 1 invalid, 2 unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from roller.capture.integrity import validate_attempt
from roller.capture.layout import find_attempts
from roller.cli.bar import shown_on


@click.command("validate")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def command(path: Path, as_json: bool) -> int:
    """Check the capture(s) under PATH (a run, a sample or an attempt directory).

    Recomputes every formal file's sha256, size and line count; checks every call's
    participant and every relation's calls and participants exist; checks statuses
    against the protocol's rules; checks that no reference points at a missing file.

    Exit status: 0 valid, 1 invalid, 2 unreadable (nothing that looks like a capture).
    """
    console = Console(stderr=False, highlight=False)
    attempts = find_attempts(path)
    if not attempts:
        click.echo(f"roller: error: no capture found under {path}", err=True)
        return 2
    with shown_on(Console(stderr=True)) as bar:
        reports = []
        for k, attempt in enumerate(attempts, start=1):
            bar.phase(f"validating {k} of {len(attempts)}" if len(attempts) > 1 else "validating")
            reports.append(validate_attempt(attempt))
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "attempt": str(r.attempt.root),
                        "ok": r.ok,
                        "unreadable": r.unreadable,
                        "problems": [p.__dict__ for p in r.problems],
                    }
                    for r in reports
                ],
                indent=2,
            )
        )
    else:
        for r in reports:
            if r.ok:
                console.print(f"[green]valid[/]    {r.attempt.root}")
            else:
                label = "unreadable" if r.unreadable else "invalid"
                console.print(f"[red]{label}[/]  {r.attempt.root}")
                for p in r.problems:
                    console.print(f"  - {p}", markup=False)
    if any(r.unreadable for r in reports):
        return 2
    return 0 if all(r.ok for r in reports) else 1

"""`roller view PATH`: the call tree of a capture, expanded by agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from roller.capture.layout import AttemptPaths, find_attempts
from roller.capture.reader import read_attempt
from roller.cli.bar import shown_on
from roller.errors import UsageError
from roller.view.render import render_tree
from roller.view.tree import build_tree


@click.command("view")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the tree as JSON for machines.")
@click.option("--html", "as_html", is_flag=True, help="Write one self-contained HTML viewer.")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --html: the file to write (default capture.html).",
)
def command(path: Path, as_json: bool, as_html: bool, out: Path | None) -> None:
    """Show the call tree of the capture(s) under PATH (run, sample or attempt directory).

    The root participant, its calls in order, each child under the call that spawned it
    (or under `unknown` when no spawn relation links it), with protocol, model, tokens,
    statuses and tool calls, then a summary line. Reads the capture; copies nothing.

    With --html, writes one self-contained page (no network, data inlined) with the agent
    tree, every call's exact request and output, relations, a timeline and search; for
    several attempts, one file each (`NAME-attempt-NNNN.html`).
    """
    attempts = find_attempts(path)
    if not attempts:
        raise UsageError(f"no capture found under {path}")
    if out is not None and not as_html:
        raise UsageError("-o/--out goes with --html")
    if as_html:
        _write_html(attempts, out or Path("capture.html"))
        return
    trees = [build_tree(read_attempt(a)) for a in attempts]
    if as_json:
        # Written as it is encoded: the whole document as one string was the largest
        # thing `--json` held (a 30k-call capture: ~90 MB).
        json.dump(trees if len(trees) > 1 else trees[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    console = Console(highlight=False)
    for tree in trees:
        render_tree(tree, console)


def _write_html(attempts: list[AttemptPaths], out: Path) -> None:
    from roller.view.html import write_html_file

    with shown_on(Console(stderr=True)) as bar:
        for k, attempt in enumerate(attempts, start=1):
            of = f" ({k} of {len(attempts)})" if len(attempts) > 1 else ""
            bar.phase(f"reading the capture{of}")
            capture = read_attempt(attempt)
            target = out
            if len(attempts) > 1:
                m = capture.manifest
                name = f"{out.stem}-{m.sample_id}-attempt-{m.attempt:04d}{out.suffix}"
                target = out.with_name(name)
            bar.phase(f"writing the page{of}")
            write_html_file(capture, target)
            click.echo(f"wrote {target} ({len(capture.calls)} call(s))", err=True)

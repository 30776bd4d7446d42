"""`roller view PATH`: the call tree of a capture, expanded by agent."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from roller.capture.layout import find_attempts
from roller.capture.reader import read_attempt
from roller.errors import UsageError
from roller.view.render import render_tree
from roller.view.tree import build_tree


@click.command("view")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the tree as JSON for machines.")
def command(path: Path, as_json: bool) -> None:
    """Show the call tree of the capture(s) under PATH (run, sample or attempt directory).

    The root participant, its calls in order, each child under the call that spawned it
    (or under `unknown` when no spawn relation links it), with protocol, model, tokens,
    statuses and tool calls, then a summary line. Reads the capture; copies nothing.
    """
    attempts = find_attempts(path)
    if not attempts:
        raise UsageError(f"no capture found under {path}")
    trees = [build_tree(read_attempt(a)) for a in attempts]
    if as_json:
        click.echo(json.dumps(trees if len(trees) > 1 else trees[0], indent=2))
        return
    console = Console(highlight=False)
    for tree in trees:
        render_tree(tree, console)

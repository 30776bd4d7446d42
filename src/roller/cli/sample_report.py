"""How `roller collect` ends a run of one task (`--prompt`, or a command): what
happened to the harness (it could not start, was stopped, timed out, exited non-zero),
each turn of a multi-turn attempt, whether the sample was reused, then the captured
call tree (`--json`: as JSON) and the main trajectory's status — the single-sample
output roller always had. The exit status rule is shared with runs of many tasks."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console

from roller.capture.reader import read_attempt
from roller.collect.collection import RunResult, SampleResult
from roller.errors import RollerError
from roller.view.render import render_tree
from roller.view.tree import build_tree


def exit_code(result: RunResult) -> int:
    if result.stopped:
        return 130
    return 0 if all(s.status == "succeeded" for s in result.samples) else 1


def finish_single(err: Console, result: RunResult, as_json: bool, timeout_s: float) -> int:
    """Today's single-sample ending: what happened to the harness, then the call tree."""
    (sample,) = result.samples
    latest = sample.verdict.latest
    if sample.reused and latest is not None:
        err.print(
            f"[green]{sample.task.id}: reused {latest.attempt.root.name}[/] (it validates and "
            f"is terminal: {latest.outcome}); no model call was made"
        )
    elif sample.last is not None:
        _print_launch(err, sample, result.stopped, timeout_s)
    if latest is None:
        err.print("[yellow]stopped before the sample started[/]")
        return exit_code(result)
    try:
        tree = build_tree(read_attempt(latest.attempt))
    except RollerError as exc:
        err.print(f"[red]{latest.attempt.root} cannot be read:[/] {exc}")
        for problem in latest.problems:  # e.g. roller's own failure on it, and where
            err.print(f"  {problem}", markup=False)
        return 1
    if as_json:
        click.echo(json.dumps(tree, indent=2))
    else:
        render_tree(tree, Console(highlight=False))
    if sample.last is not None:
        if sample.last.scratch is not None:
            err.print(f"scratch kept at {sample.last.scratch}")
        t = sample.last.trajectory
        err.print(
            f"main trajectory: {len(t.segments)} segment(s), {t.export_status}"
            + (f" ({', '.join(t.export_blocked_by)})" if t.export_blocked_by else "")
        )
    sys.stdout.flush()
    return exit_code(result)


def _print_launch(err: Console, sample: SampleResult, stopped_run: bool, timeout_s: float) -> None:
    done = sample.last
    assert done is not None
    launch = done.launch
    stopped = stopped_run or launch.stopped or any(t.stopped for t in done.turns)
    ran = [t for t in done.turns if t.launch is not None]
    output_dir = ran[-1].output_dir if ran else done.attempt.harness_output
    if len(done.turns) > 1:
        _print_turns(err, sample)
    if launch.launch_error:
        err.print(f"[red]the harness could not start:[/] {launch.launch_error}")
    elif stopped:
        err.print("[yellow]stopped on request; the capture of what ran so far is below[/]")
    elif launch.timed_out:
        err.print(f"[yellow]the harness timed out after {timeout_s:.0f}s and was stopped[/]")
    elif launch.exit_code != 0:
        err.print(
            f"[yellow]the harness exited with status {launch.exit_code}[/] "
            f"(stderr: {output_dir / 'stderr.txt'})"
        )


def _print_turns(err: Console, sample: SampleResult) -> None:
    done = sample.last
    assert done is not None
    by_turn = {t.turn: t for t in done.manifest.turns or []}
    for turn in done.turns:
        record = by_turn.get(turn.turn)
        if record is None:
            continue
        line = f"turn {turn.turn}: {record.execution_status}"
        if record.execution_status != "not_run":
            line += f", {len(record.call_ids)} call(s)"
        if record.resumed_root:
            line += f", resumed {record.resumed_root}"
        if record.problem:
            line += f" — {record.problem}"
        colour = "green" if record.execution_status == "completed" else "yellow"
        err.print(f"[{colour}]{line}[/]")

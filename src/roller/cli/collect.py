"""`roller collect`: run a harness (or any command) behind the recording proxy."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import click
from rich.console import Console

from roller.capture.models import STORAGE_LAYOUTS, Retention, StorageLayout
from roller.capture.reader import read_attempt
from roller.collect.session import CollectRequest, CollectResult, collect
from roller.errors import UsageError
from roller.harnesses import adapter_for, adapters
from roller.harnesses.base import ResumableAdapter
from roller.view.render import render_tree
from roller.view.tree import build_tree

DEFAULT_API_BASE = "mock:plain"


@click.command(
    "collect",
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
)
@click.option(
    "--harness",
    required=True,
    type=click.Choice([a.name for a in adapters()]),
    help="What to run: a known harness; "
    + ", ".join(f"`{a.name}`" for a in adapters() if a.runs_command)
    + " runs the command after `--`.",
)
@click.option(
    "--api-base",
    help="Upstream model API: a URL (https://api.anthropic.com, …) or mock:SCENARIO for "
    f"the built-in mock model. Default: {DEFAULT_API_BASE}.",
)
@click.option("--run-dir", required=True, type=click.Path(path_type=Path), help="Run directory.")
@click.option("--sample-id", default="sample-0001", show_default=True, help="Sample id.")
@click.option(
    "--prompt",
    "prompts",
    multiple=True,
    help="The task given to the harness. Repeat it for a multi-turn conversation: each "
    "later prompt resumes the same conversation ("
    + ", ".join(a.name for a in adapters() if isinstance(a, ResumableAdapter))
    + "), and the whole conversation is one capture.",
)
@click.option(
    "--prompts-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON list of strings, one prompt per turn, instead of --prompt (a prompt may "
    "span lines).",
)
@click.option(
    "--capture-calls",
    is_flag=True,
    help="Allow native subagents and capture their calls (needs an explicit --api-base). "
    "Without it, native delegation tools are denied where the harness allows it.",
)
@click.option(
    "--capture-debug",
    type=click.Choice(get_args(Retention)),
    default="on-error",
    show_default=True,
    help="Keep raw/ (tape, native logs, raw responses): on error, always, or never.",
)
@click.option(
    "--storage-layout",
    type=click.Choice(STORAGE_LAYOUTS),
    default="compact/v2",
    show_default=True,
    help="compact/v3 stores each request body once, content-addressed (contexts.blobs); "
    "every reader gives the same records (docs/protocol.md).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=300.0,
    show_default=True,
    help="Kill the harness after this many seconds (each turn, when there are several).",
)
@click.option("--model", help="Model name to ask the harness to use.")
@click.option("--harness-version", help="Run this harness version instead of the pin.")
@click.option("--keep-scratch", is_flag=True, help="Keep the scratch HOME/work directories.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Harness-specific launch option (see docs/harnesses.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest summary as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(
    harness: str,
    api_base: str | None,
    run_dir: Path,
    sample_id: str,
    prompts: tuple[str, ...],
    prompts_file: Path | None,
    capture_calls: bool,
    capture_debug: Retention,  # click.Choice admits only these values
    storage_layout: StorageLayout,
    timeout_s: float,
    model: str | None,
    harness_version: str | None,
    keep_scratch: bool,
    options: tuple[str, ...],
    as_json: bool,
    command: tuple[str, ...],
) -> int:
    """Run a harness behind roller's recording proxy and capture every model call.

    \b
    Examples:
      roller collect --harness claude-code --api-base mock:spawn-one --capture-calls \\
          --prompt "Use a subagent to say hi" --run-dir runs/demo
      roller collect --harness opencode --prompt "Write hi.py" --prompt "Now test it" \\
          --run-dir runs/chat
      roller collect --harness generic --api-base mock:plain --run-dir runs/g -- python agent.py

    Several prompts run one after the other in the same scratch HOME and work dir, each
    after the previous turn exited; a later turn resumes the root conversation the
    harness's native logs confirm (never "the most recent session"), and collection
    stops, keeping what ran, when they confirm none. --timeout applies to each turn.

    Ends by printing the captured call tree; exits 0 when the harness completed (every
    turn) and the capture is complete, 1 otherwise (the capture is written either way).
    """
    turns = read_prompts(prompts, prompts_file)
    if capture_calls and api_base is None:
        raise UsageError("--capture-calls requires an explicit --api-base (URL or mock:SCENARIO)")
    runs_command = adapter_for(harness).runs_command
    if runs_command and not command:
        raise UsageError(f"--harness {harness} needs the command to run after `--`")
    if not runs_command and command:
        raise UsageError(
            f"--harness {harness} runs the harness itself; pass --prompt, not a command"
        )
    if not runs_command and not turns:
        raise UsageError(f"--harness {harness} needs --prompt")
    parsed: dict[str, str] = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option expects KEY=VALUE, got {item!r}")
        parsed[key] = value
    request = CollectRequest(
        run_dir=run_dir,
        harness=harness,
        api_base=api_base or DEFAULT_API_BASE,
        sample_id=sample_id,
        prompt=turns[0] if turns else None,
        follow_up_prompts=turns[1:],
        command=command,
        harness_version=harness_version,
        capture_calls=capture_calls,
        capture_debug=capture_debug,
        storage_layout=storage_layout,
        timeout_s=timeout_s,
        model=model,
        keep_scratch=keep_scratch,
        options=parsed,
    )
    err = Console(stderr=True, highlight=False)
    with err.status("starting…") as status:
        result = asyncio.run(_collect_until_interrupted(request, status.update))
    launch = result.launch
    stopped = launch.stopped or any(t.stopped for t in result.turns)
    ran = [t for t in result.turns if t.launch is not None]
    output_dir = ran[-1].output_dir if ran else result.attempt.harness_output
    if len(result.turns) > 1:
        _print_turns(err, result)
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
    tree = build_tree(read_attempt(result.attempt))
    if as_json:
        click.echo(json.dumps(tree, indent=2))
    else:
        render_tree(tree, Console(highlight=False))
    if result.scratch is not None:
        err.print(f"scratch kept at {result.scratch}")
    t = result.trajectory
    err.print(
        f"main trajectory: {len(t.segments)} segment(s), {t.export_status}"
        + (f" ({', '.join(t.export_blocked_by)})" if t.export_blocked_by else "")
    )
    m = result.manifest
    ok = m.execution_status == "completed" and m.capture_status == "complete"
    sys.stdout.flush()
    if stopped:
        return 130
    return 0 if ok else 1


def read_prompts(prompts: tuple[str, ...], prompts_file: Path | None) -> tuple[str, ...]:
    """The prompt of each turn, from --prompt (repeated) or --prompts-file (a JSON list).

    An empty prompt is refused here, before anything is written (a headless harness has
    nothing to do with it); `()` means none was given.
    """
    if prompts_file is not None:
        if prompts:
            raise UsageError("give the turns with --prompt or with --prompts-file, not both")
        where = f"--prompts-file {prompts_file}"
        try:
            data = json.loads(prompts_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"{where}: cannot read it ({exc.strerror or exc})") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{where}: not JSON ({exc})") from exc
        if not (isinstance(data, list) and data and all(isinstance(x, str) for x in data)):
            raise UsageError(f"{where}: expected a JSON list of strings, one prompt per turn")
        prompts = tuple(data)
    for n, prompt in enumerate(prompts, 1):
        if not prompt.strip():
            which = f"prompt {n}" if len(prompts) > 1 else "--prompt"
            raise UsageError(f"{which} is empty")
    return prompts


def _print_turns(err: Console, result: CollectResult) -> None:
    by_turn = {t.turn: t for t in result.manifest.turns or []}
    for turn in result.turns:
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


async def _collect_until_interrupted(
    request: CollectRequest, progress: Callable[[str], None]
) -> CollectResult:
    """The first Ctrl-C (or SIGTERM) stops the harness and still publishes the capture;
    a second one interrupts roller itself."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def first_signal() -> None:
        stop.set()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, first_signal)
    try:
        return await collect(request, progress=progress, stop=stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

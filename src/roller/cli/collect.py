"""`roller collect`: run a harness (or any command) behind the recording proxy, for one
sample (`--prompt`), a tasks file (`--tasks`) or the rest of a run (`--resume DIR`).

Every mode is the same run (`roller.collect.collection`): one `--prompt` is a run of one
task. This module declares the flags (`roller.cli.collect_request` turns them into a
`RunRequest`, refusing what cannot go together), runs the request with Ctrl-C handling,
and shows it: a spinner and the call tree for one task, the live progress display and
summary table (`roller.cli.progress`) for several.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import click
from rich.console import Console

from roller.capture.models import STORAGE_LAYOUTS, Retention
from roller.cli.collect_request import (
    ALIASES,
    DEFAULT_API_BASE,
    DEFAULT_SAMPLE_ID,
    DEFAULT_TIMEOUT_S,
    aliases,
    run_request,
    str_flag,
)
from roller.cli.progress import RunDisplay, summary_table
from roller.cli.sample_report import exit_code, finish_single
from roller.collect.collection import RunEvent, RunRequest, RunResult, collect_run
from roller.collect.executor import (
    EXECUTORS,
    Executor,
    ExecutorChoice,
    ExecutorName,
    make_executor,
)
from roller.collect.runs import RunSpec
from roller.harnesses import adapter_for, adapters
from roller.harnesses.base import ModelNoticeAdapter, ResumableAdapter


def _note_alias(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and param.opts:
        ctx.meta.setdefault(ALIASES, []).append(param.opts[0])


def _with_aliases(f: Callable[..., object]) -> Callable[..., object]:
    for alias, canonical, owner in reversed(aliases()):
        f = click.option(
            alias,
            is_flag=True,
            expose_value=False,
            callback=_note_alias,
            help=f"The original name of {canonical}, kept for --harness {owner}.",
        )(f)
    return f


def _capture_calls_help() -> str:
    kept = "; ".join(f"{a} is its original name for --harness {o}" for a, c, o in aliases())
    return (
        "Allow native subagents and capture their calls (needs an explicit --api-base). "
        "Without it, native delegation tools are denied where the harness allows it."
        + (f" ({kept}.)" if kept else "")
    )


@click.command(
    "collect",
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
)
@click.option(
    "--harness",
    type=click.Choice([a.name for a in adapters()]),
    help="What to run: a known harness; "
    + ", ".join(f"`{a.name}`" for a in adapters() if a.runs_command)
    + " runs the command after `--`. Required unless --resume.",
)
@click.option(
    "--api-base",
    help="Upstream model API: a URL (https://api.anthropic.com, http://127.0.0.1:PORT, …) "
    f"or mock:SCENARIO for the built-in mock model. Default: {DEFAULT_API_BASE}.",
)
@click.option("--run-dir", type=click.Path(path_type=Path), help="Run directory.")
@click.option(
    "--tasks",
    "tasks_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help='A JSONL file, one task a line: {"id", "prompt" | "turns": [...], optional '
    '"files", "model", "options"} (docs/collect.md). Every bad line is refused first.',
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Continue the run in this directory from its run.json and task snapshot: reuse "
    "every sample whose latest attempt validates and is terminal, collect the rest.",
)
@click.option("--sample-id", help=f"Sample id of a --prompt run (default {DEFAULT_SAMPLE_ID}).")
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
@click.option("--capture-calls", is_flag=True, help=_capture_calls_help())
@_with_aliases
@click.option(
    "--storage-layout",
    type=click.Choice(STORAGE_LAYOUTS),
    help="compact/v3 stores each request body once, content-addressed (contexts.blobs); "
    "every reader gives the same records (docs/protocol.md). Default compact/v2.",
)
@click.option(
    "--capture-debug",
    type=click.Choice(get_args(Retention)),
    help="Keep raw/ (tape, native logs, raw responses): on error (default), always, or never.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    help="Kill the harness after this many seconds (each turn, when there are several). "
    f"Default {DEFAULT_TIMEOUT_S:.0f}, or the run's on --resume.",
)
@click.option("--model", help="Model name to ask the harness to use (a task's own wins).")
@click.option("--harness-version", help="Run this harness version instead of the pin.")
@click.option("--keep-scratch", is_flag=True, help="Keep the scratch HOME/work directories.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Harness-specific launch option (see docs/harnesses.md); a task's own win.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Samples collected at once, each with its own proxy, scratch dirs and harness. "
    "Default 1; with --executor ray, as many as the cluster's CPUs allow.",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="local",
    show_default=True,
    help="Where samples run: in this process, or as tasks on a Ray cluster "
    "(pip install 'roller[ray]'; docs/scale.md).",
)
@click.option(
    "--ray-address",
    help="The Ray cluster: auto (the one `ray start` runs here), ray://HOST:PORT, or "
    "none given: a Ray started for this run on this machine.",
)
@click.option(
    "--cpus-per-sample",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="CPUs Ray reserves for each sample (--executor ray).",
)
@click.option(
    "--shared-run-dir",
    is_flag=True,
    help="Every Ray node sees the run directory at the same path: samples write it "
    "directly instead of coming back as archives (--executor ray).",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1),
    help="Attempts a failing sample gets (each kept). Default 1, or the run's on --resume.",
)
@click.option(
    "--single-agent",
    is_flag=True,
    help="Declare that the command is one agent: its calls belong to one root "
    "participant unless x-roller-* headers say otherwise (harnesses that run a command).",
)
@click.option(
    "--redact-header",
    "redact_headers",
    multiple=True,
    metavar="NAME",
    help="Also keep this request header off disk (repeatable), e.g. a key in x-key; "
    "credential headers and key-like names are always kept off.",
)
@click.option(
    "--redact-query",
    "redact_query",
    multiple=True,
    metavar="NAME",
    help="Also keep this query parameter off disk (repeatable), e.g. k.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def command(ctx: click.Context, /, **flags: object) -> int:
    """Run a harness behind roller's recording proxy and capture every model call.

    \b
    Examples:
      roller collect --harness claude-code --api-base mock:spawn-one --capture-calls \\
          --prompt "Use a subagent to say hi" --run-dir runs/demo
      roller collect --harness opencode --prompt "Write hi.py" --prompt "Now test it" \\
          --run-dir runs/chat
      roller collect --harness generic --single-agent --api-base mock:plain \\
          --run-dir runs/g -- python agent.py
      roller collect --harness claude-code --api-base mock:spawn-one --capture-calls \\
          --tasks tasks.jsonl --run-dir runs/many --concurrency 4 --attempts 2
      roller collect --resume runs/many
      roller collect --harness claude-code --api-base mock:spawn-one --capture-calls \\
          --tasks tasks.jsonl --run-dir runs/many --executor ray --ray-address auto

    Several prompts run one after the other in the same scratch HOME and work dir, each
    after the previous turn exited; a later turn resumes the root conversation the
    harness's native logs confirm (never "the most recent session"), and collection
    stops, keeping what ran, when they confirm none. --timeout applies to each turn.

    Collecting into a run directory that already holds the sample reuses it when its
    latest attempt validates and is terminal (as --resume does); otherwise a new attempt
    is collected and the old one kept.

    One task ends by printing the captured call tree; several end with a summary table
    (and DIR/summary.json). Exits 0 when every sample's harness completed and its capture
    is complete, 1 otherwise (the captures are written either way), 130 when stopped.
    """
    request, single = run_request(flags, ctx.meta.get(ALIASES, []))
    executor = make_executor(_executor_choice(flags))
    try:
        return _collect(request, single, flags, executor)
    finally:
        executor.close()


def _executor_choice(flags: dict[str, object]) -> ExecutorChoice:
    name: ExecutorName = "ray" if flags["executor"] == "ray" else "local"
    cpus = flags["cpus_per_sample"]
    assert isinstance(cpus, float)
    concurrency = flags["concurrency"]
    return ExecutorChoice(
        name=name,
        concurrency=concurrency if isinstance(concurrency, int) else None,
        ray_address=str_flag(flags["ray_address"]),
        cpus_per_sample=cpus,
        shared_run_dir=bool(flags["shared_run_dir"]),
    )


def _collect(
    request: RunRequest, single: bool, flags: dict[str, object], executor: Executor
) -> int:
    err = Console(stderr=True, highlight=False)
    notice = model_notice(request.spec)
    if notice is not None:
        err.print(notice, markup=False, soft_wrap=True)  # one line, never wrapped
    if single:
        with err.status("starting…") as status:

            def show(event: RunEvent) -> None:
                if event.status or event.line:
                    status.update(event.status or event.line or "")

            result = asyncio.run(_until_interrupted(request, show, executor))
        return finish_single(err, result, bool(flags["as_json"]), request.spec.timeout_s)
    with RunDisplay(err) as display:
        result = asyncio.run(_until_interrupted(request, display, executor))
    if flags["as_json"]:
        click.echo(json.dumps(result.summary.model_dump(by_alias=True, mode="json"), indent=2))
    else:
        Console(highlight=False).print(summary_table(result.summary))
    err.print(f"summary written to {result.run.summary}")
    return exit_code(result)


def model_notice(spec: RunSpec) -> str | None:
    """The harness's line on which request shape its default model gives, for a run
    against a real upstream without `--model` (`ModelNoticeAdapter`)."""
    if spec.model is not None or spec.api_base.startswith("mock:"):
        return None
    adapter = adapter_for(spec.harness)
    if not isinstance(adapter, ModelNoticeAdapter):
        return None
    return adapter.model_notice(None, spec.harness_version or adapter.pin.version)


async def _until_interrupted(
    request: RunRequest, on_event: Callable[[RunEvent], None], executor: Executor
) -> RunResult:
    """The first Ctrl-C (or SIGTERM) stops the running harnesses and still publishes
    their captures, and starts no more; a second one interrupts roller itself."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def first_signal() -> None:
        stop.set()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, first_signal)
    try:
        return await collect_run(request, on_event, stop, executor)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

"""`roller mock-model`: run the embedded mock model server until Ctrl-C or SIGTERM.

Prints the URL it listens on (one line on stdout, flushed, so a script can read it) and,
unless `--quiet`, one line per request on stderr naming the rule that answered.
"""

from __future__ import annotations

import asyncio

import click

from roller.cli.serving import announce_and_wait, parse_listen
from roller.mock import MockModel, ServedRequest, builtin_scenarios, load_scenario


def _epilog() -> str:
    # "\b" keeps click from re-wrapping the table into one paragraph.
    lines = ["Built-in scenarios (format: docs/mock.md):", "", "\b"]
    lines += [f"{name:<24} {text}" for name, text in builtin_scenarios().items()]
    return "\n".join(lines)


def _log_line(served: ServedRequest) -> None:
    what = served.reply or served.error or ""
    rule = f" rule={served.rule!r}" if served.rule else ""
    model = f" model={served.model}" if served.model else ""
    turn = f" turn={served.turn}" if served.turn is not None else ""
    click.echo(f"{served.status} {served.method} {served.path}{model}{turn}{rule} {what}", err=True)


@click.command(
    "mock-model",
    epilog=_epilog(),
    context_settings={"max_content_width": 120},
)
@click.option(
    "--listen",
    default="127.0.0.1:0",
    show_default=True,
    help="HOST:PORT to listen on; port 0 picks a free port.",
)
@click.option(
    "--scenario",
    "scenario_name",
    default="plain",
    show_default=True,
    help="A built-in scenario name or a path to a scenario .toml file.",
)
@click.option(
    "--delay-ms",
    type=click.IntRange(min=0),
    default=None,
    help="Pause between streamed events (default: the scenario's delay_ms, usually 0).",
)
@click.option("--quiet", is_flag=True, help="Do not log one line per request on stderr.")
def command(listen: str, scenario_name: str, delay_ms: int | None, quiet: bool) -> None:
    """Serve a scripted model on Anthropic Messages, OpenAI Chat Completions, OpenAI
    Responses and Gemini endpoints, streamed and not."""
    host, port = parse_listen(listen)
    scenario = load_scenario(scenario_name)
    mock = MockModel(scenario, delay_ms=delay_ms, on_request=None if quiet else _log_line)
    asyncio.run(_serve(mock, host, port))


async def _serve(mock: MockModel, host: str, port: int) -> None:
    running = await mock.serve(host, port)
    try:
        await announce_and_wait(
            [f"roller mock-model: scenario {mock.scenario.name!r} listening on {running.url}"]
        )
    finally:
        await running.close()
    click.echo(f"roller mock-model: stopped after {mock.requests} requests", err=True)

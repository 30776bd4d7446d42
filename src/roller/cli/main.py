"""The `roller` command group.

Commands are loaded lazily from `COMMANDS` (name -> "module:attribute") so `roller --help`
stays fast and one command's import errors never break another. Every `RollerError` is
printed as one clear line with its exit code; nothing reaches the user as a traceback
except a genuine bug, and that one says so.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from roller import __version__
from roller.errors import RollerError

# name -> (module, attribute, one-line help shown in `roller --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "collect": ("roller.cli.collect", "command", "Run a harness behind the recording proxy."),
    "export": ("roller.cli.export", "command", "Export calls or main trajectories as JSONL."),
    "finalize": ("roller.cli.finalize", "command", "Rebuild a capture's formal files from raw/."),
    "gateway": ("roller.cli.gateway", "command", "Run the recording gateway; manage its tokens."),
    "harness": ("roller.cli.harness", "command", "Install and list pinned harness binaries."),
    "reproject": (
        "roller.cli.reproject",
        "command",
        "Re-finalize a sample into a copy and validate it (the original untouched).",
    ),
    "validate": ("roller.cli.validate", "command", "Check a capture's integrity."),
    "sessions": ("roller.cli.sessions", "command", "Inspect the gateway's session store."),
    "view": ("roller.cli.view", "command", "Show a capture's call tree by agent."),
    "mock-model": ("roller.cli.mock_model", "command", "Run the scripted mock model server."),
    "proxy": (
        "roller.cli.proxy",
        "proxy",
        "Run the recording reverse proxy in front of a model upstream.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        command = getattr(module, spec[1])
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roller")
def cli() -> None:
    """Run coding-agent harnesses behind a recording gateway and capture every model call,
    attributed to the agent (root or subagent) that made it."""


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script. Exit codes: 0 ok, 1 failure, 2 usage/unreadable."""
    try:
        result: Any = cli.main(args=argv, prog_name="roller", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("roller: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RollerError as exc:
        click.echo(f"roller: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a path that cannot be read or written (an output's directory
        # missing, a permission): said in a line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"roller: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("roller: interrupted", err=True)
        sys.exit(130)
    if isinstance(result, int):
        sys.exit(result)

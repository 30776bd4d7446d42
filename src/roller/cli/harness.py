"""`roller harness list|install`: pinned harness binaries in roller's cache."""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.console import Console
from rich.status import Status
from rich.table import Table

from roller.errors import UsageError
from roller.harnesses import adapter_for, adapters
from roller.harnesses.install import cache_root, find_installed, install


@click.group("harness")
def command() -> None:
    """Install and list the coding-agent harnesses roller can launch.

    Binaries come from their own registries (npm, PyPI) at exact pinned versions and live
    in roller's cache ($ROLLER_CACHE, default ~/.cache/roller/harnesses/NAME-VERSION/).
    """


@command.command("list")
def list_() -> None:
    """Show each harness: pinned version, installed or not, capabilities, `--option` keys."""
    table = Table(title=f"harnesses (cache: {cache_root() / 'harnesses'})")
    columns = (
        "harness",
        "package",
        "pinned",
        "installed",
        "subtasks",
        "output coverage",
        "options",
    )
    for col in columns:
        table.add_column(col)
    for a in adapters():
        if a.runs_command:
            installed = "n/a (your command)"
            package = "-"
        else:
            found = find_installed(a)
            installed = f"[green]yes[/] {found.bin}" if found else "[yellow]no[/]"
            package = f"{a.pin.registry}:{a.pin.package}"
        options = ", ".join(o.key for o in a.options) or "-"
        table.add_row(
            a.name, package, a.pin.version or "-", installed, a.subtasks, a.coverage_basis, options
        )
    Console().print(table)


@command.command("install")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Install every installable harness.")
@click.option("--version", "version", help="Install this version instead of the pin (one harness).")
def install_(names: tuple[str, ...], all_: bool, version: str | None) -> None:
    """Install NAMES (or --all) at their pinned versions; idempotent."""
    if all_:
        chosen = [a for a in adapters() if a.pin.registry != "none"]
    elif names:
        chosen = [adapter_for(n) for n in names]
    else:
        raise UsageError("name a harness (see `roller harness list`) or pass --all")
    if version is not None and len(chosen) != 1:
        raise UsageError("--version applies to exactly one harness")
    console = Console(stderr=True)
    for a in chosen:
        if a.pin.registry == "none":
            raise UsageError(f"{a.name} runs your own command; there is nothing to install")
        want = version or a.pin.version
        label = f"installing {a.name} {want}"
        with console.status(f"{label} from {a.pin.registry}…") as status:
            done = install(a, version, log=_progress(status, label))
        console.print(f"[green]✓[/] {a.name} {done.version} → {done.bin}")


def _progress(status: Status, label: str) -> Callable[[str], None]:
    """Show the installer's latest output line under `label` in the spinner."""

    def update(line: str) -> None:
        status.update(f"{label}: {line[-100:]}")

    return update

"""`roller gateway`: run the long-running recording gateway; `roller gateway token add`.

Rules this command keeps:
- `roller gateway --config gateway.toml` runs in the foreground and prints where it
  listens, which database and which tape (stdout, flushed: scripts read the first line to
  learn a port chosen with `:0`). CLI flags win over the file's `[gateway]` table.
- SIGINT/SIGTERM stop it cleanly: exchanges in flight get a grace period and their
  `call` rows are written before the store closes. Tape write errors or call rows that
  could not be written make the exit code 1.
- A non-loopback `--listen` needs `--tls-cert` and `--tls-key` (HTTPS) or
  `--allow-insecure-remote` (roller.gateway.server.check_exposure).
- `token add` prints the new token once, on stdout, and stores only its SHA-256.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import click

from roller.cli.serving import announce_and_wait, parse_listen
from roller.errors import UsageError
from roller.gateway.config import load_config, resolve_db
from roller.gateway.server import Gateway
from roller.gateway.store import safe_url
from roller.gateway.tokens import add_client
from roller.harnesses import harness_names

_CONFIG = click.Path(dir_okay=False, path_type=Path)


@click.group("gateway", invoke_without_command=True)
@click.option("--config", "config_path", type=_CONFIG, help="The gateway's TOML configuration.")
@click.option("--listen", metavar="HOST:PORT", help="Address to listen on (default from config).")
@click.option("--db", metavar="URL", help="Session store: a SQLite file or postgresql://… URL.")
@click.option(
    "--tape",
    "tape_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Tape directory (default from config, else 'tape' beside it).",
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM certificate chain: serve HTTPS.",
)
@click.option(
    "--tls-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM private key of --tls-cert.",
)
@click.option(
    "--allow-insecure-remote",
    is_flag=True,
    help="Allow a non-loopback --listen address without TLS (tokens then cross in clear).",
)
@click.option("--shutdown-grace", type=float, default=5.0, show_default=True)
@click.pass_context
def command(
    ctx: click.Context,
    config_path: Path | None,
    listen: str | None,
    db: str | None,
    tape_dir: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    allow_insecure_remote: bool,
    shutdown_grace: float,
) -> int | None:
    """Run the recording gateway: many harnesses, one proxy core, sessions in a database.

    Each harness is configured with the gateway's URL and a roller token (from
    `roller gateway token add`) as its API key; the gateway swaps in the real upstream key,
    records every exchange on the tape and charges it to a session row derived from the
    request's identity headers, with parent links for subagents.
    """
    if ctx.invoked_subcommand is not None:
        return None
    if config_path is None:
        raise UsageError("roller gateway needs --config gateway.toml")
    if (tls_cert is None) != (tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    config = load_config(config_path)
    base = config_path.parent
    host, port = parse_listen(listen or config.listen)
    db_url = resolve_db(db, Path.cwd()) if db else config.db or f"sqlite:///{base / 'gateway.db'}"
    tape = tape_dir or config.tape or base / "tape"
    gateway = Gateway(
        config,
        db_url=db_url,
        tape_dir=tape,
        host=host,
        port=port,
        tls=None if tls_cert is None or tls_key is None else (tls_cert, tls_key),
        allow_insecure_remote=allow_insecure_remote,
    )
    return asyncio.run(_serve(gateway, shutdown_grace))


async def _serve(gateway: Gateway, grace: float) -> int:
    url = await gateway.start()
    # What is alive now (modules, the ORM's metadata, the configuration: ~120k objects)
    # lives as long as the process: out of the collector's generations, so a full
    # collection under load does not walk it (measured: ~60 ms each, several a minute).
    gc.collect()
    gc.freeze()
    lines = [
        f"roller gateway: listening on {url}",
        f"roller gateway: db {safe_url(gateway.db_url)}",
        f"roller gateway: tape {gateway.tape_dir.resolve()}",
    ]
    if gateway.recovery.crashed:
        lines.append(
            "roller gateway: the previous run did not stop cleanly; "
            f"{gateway.recovery.rows_written} exchange(s) without a call row recovered"
        )
    try:
        await announce_and_wait(lines)
    finally:
        await gateway.stop(grace=grace)
    errors = gateway.tape_errors
    click.echo("roller gateway: stopped; tape closed")
    for error in errors:
        click.echo(f"roller gateway: tape error: {error}", err=True)
    if gateway.store_errors:
        click.echo(
            f"roller gateway: {gateway.store_errors} call row(s) could not be written; "
            "each exchange says so on the tape (end_hook_error)",
            err=True,
        )
    return 1 if errors or gateway.store_errors else 0


@command.group("token")
def token() -> None:
    """Manage the roller tokens clients use as their API key."""


@token.command("add")
@click.option("--config", "config_path", type=_CONFIG, required=True)
@click.option("--principal", required=True, help="Who uses the token (a plain name).")
@click.option("--account", required=True, help="The account the principal belongs to.")
@click.option(
    "--harness",
    required=True,
    type=click.Choice(harness_names()),
    help="The harness the token is for: only its identity headers are trusted.",
)
def token_add(config_path: Path, principal: str, account: str, harness: str) -> None:
    """Append a client to the config and print its new token (shown only this once)."""
    click.echo(add_client(config_path, principal=principal, account=account, harness=harness))

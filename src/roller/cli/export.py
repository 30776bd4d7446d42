"""`roller export calls` / `roller export trajectory`: exportable calls, or the main
trajectory of each attempt, as JSONL."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths, find_attempts
from roller.capture.reader import read_attempt
from roller.errors import IntegrityError, UsageError
from roller.export.calls import capture_records, write_jsonl
from roller.export.trajectory import build_trajectory
from roller.export.trajectory_file import serialize


@click.group("export")
def command() -> None:
    """Export captured data for training and evaluation."""


@command.command("calls")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--gateway",
    "gateway_db",
    metavar="DB",
    help="Export a gateway's calls instead: its session store (SQLite file or URL).",
)
@click.option("--account", help="With --gateway: only this account's calls.")
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output JSONL file (default: stdout).",
)
@click.option(
    "--include-blocked",
    is_flag=True,
    help="Also export blocked calls (each says why in export_blocked_by).",
)
def calls(
    path: Path | None,
    gateway_db: str | None,
    account: str | None,
    out: Path | None,
    include_blocked: bool,
) -> None:
    """Export the calls of every capture under PATH (run, sample or attempt), or of a
    gateway (--gateway DB: each call decoded from the tape exchange the database names).

    Each capture is validated first; an invalid capture is refused, never half-exported.
    Only `exportable` calls are written unless --include-blocked.
    """
    if (path is None) == (gateway_db is None):
        raise UsageError("give either a capture PATH or --gateway DB")
    if gateway_db is not None:
        _export_gateway(gateway_db, account, out, include_blocked)
        return
    assert path is not None
    attempts = _valid_attempts(path)
    records = (r for a in attempts for r in capture_records(read_attempt(a), include_blocked))
    if out is None:
        n = write_jsonl(records, sys.stdout)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            n = write_jsonl(records, fh)
    click.echo(f"exported {n} call(s)", err=True)


def _export_gateway(db: str, account: str | None, out: Path | None, include_blocked: bool) -> None:
    from roller.gateway.config import resolve_db
    from roller.gateway.export import gateway_records
    from roller.gateway.store import SessionStore, open_engine

    store = SessionStore(open_engine(resolve_db(db, Path.cwd())))
    try:
        records = gateway_records(store, account=account, include_blocked=include_blocked)
        if out is None:
            n = write_jsonl(records, sys.stdout)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                n = write_jsonl(records, fh)
    finally:
        store.engine.dispose()
    click.echo(f"exported {n} call(s)", err=True)


def _valid_attempts(path: Path) -> list[AttemptPaths]:
    """Every attempt under `path`, each validated: an invalid one is refused, not skipped."""
    attempts = find_attempts(path)
    if not attempts:
        raise UsageError(f"no capture found under {path}")
    for a in attempts:
        report = validate_attempt(a)
        if not report.ok:
            first = report.problems[0] if report.problems else "unreadable"
            raise IntegrityError(f"{a.root} does not validate ({first}); run `roller validate`")
    return attempts


@command.command("trajectory")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output JSONL file (default: stdout).",
)
@click.option(
    "--include-blocked",
    is_flag=True,
    help="Also export blocked trajectories (each says why in export_blocked_by).",
)
def trajectory(path: Path, out: Path | None, include_blocked: bool) -> None:
    """Export the main trajectory (root participant only) of every attempt under PATH
    (run, sample or attempt): one `roller.trajectory/v1` record per attempt and line.

    Rebuilt from each capture, which is validated first (an invalid capture is refused);
    the result is the same record `roller collect` stored under the sample's
    trajectory/. Only exportable trajectories are written unless --include-blocked.
    """
    records = [build_trajectory(read_attempt(a)) for a in _valid_attempts(path)]
    chosen = [r for r in records if include_blocked or r.export_status == "exportable"]
    lines = "".join(serialize(r) + "\n" for r in chosen)
    if out is None:
        sys.stdout.write(lines)
    else:
        out.write_text(lines, encoding="utf-8")
    skipped = len(records) - len(chosen)
    click.echo(
        f"exported {len(chosen)} trajectory(ies)"
        + (f", skipped {skipped} blocked (--include-blocked to include)" if skipped else ""),
        err=True,
    )

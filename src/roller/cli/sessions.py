"""`roller sessions list|tree|show --db URL [--json]`: read the gateway's session store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.tree import Tree
from sqlalchemy import make_url

from roller.errors import UsageError
from roller.gateway.config import resolve_db
from roller.gateway.inspection import forest, session_json, session_tree
from roller.gateway.store import SessionStore, open_engine

_DB = click.option("--db", required=True, metavar="URL", help="SQLite file or postgresql://… URL.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
_ACCOUNT = click.option("--account", help="Only this account's sessions.")


def _store(db: str) -> SessionStore:
    """Open an existing store; inspection never creates a database by accident."""
    url = resolve_db(db, Path.cwd())
    parsed = make_url(url)
    if (
        parsed.get_backend_name() == "sqlite"
        and parsed.database
        and not Path(parsed.database).exists()
    ):
        raise UsageError(f"no session database at {parsed.database} (is --db right?)")
    return SessionStore(open_engine(url))


def _emit(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


@click.group("sessions")
def command() -> None:
    """Inspect the gateway's sessions: rows, parents, calls."""


@command.command("list")
@_DB
@_ACCOUNT
@_JSON
def list_sessions(db: str, account: str | None, as_json: bool) -> None:
    """Every session, oldest first."""
    store = _store(db)
    try:
        rows = store.sessions(account)
        counts = store.call_counts()
    finally:
        store.engine.dispose()
    if as_json:
        _emit([{**session_json(r), "calls": counts.get(r.id, 0)} for r in rows])
        return
    table = Table(
        "id", "account", "principal", "harness", "key", "role", "parent", "calls", "state"
    )
    for r in rows:
        table.add_row(
            r.id,
            r.account,
            r.principal,
            r.harness,
            f"{r.source_type}:{r.source_id}",
            r.role or "-",
            r.parent_session_id or "-",
            str(counts.get(r.id, 0)),
            "closed" if r.closed_at else "open",
        )
    Console(width=200).print(table)


def _label(node: dict[str, Any]) -> str:
    role = node["role"] or "?"
    return (
        f"{node['source_type']}:{node['source_id']}  [{role}]  {node['principal']}  "
        f"calls={node['calls']}  id={node['id']}"
    )


def _add(tree: Tree, node: dict[str, Any]) -> None:
    for child in node["children"]:
        _add(tree.add(_label(child)), child)


@command.command("tree")
@_DB
@_ACCOUNT
@click.option("--session", "session_id", help="Only this session's subtree.")
@_JSON
def tree(db: str, account: str | None, session_id: str | None, as_json: bool) -> None:
    """Sessions as trees of parents and children."""
    store = _store(db)
    try:
        if session_id is not None:
            row = store.get(session_id)
            if row is None:
                raise UsageError(f"no session {session_id}")
            trees = [session_tree(store, row)]
        else:
            trees = forest(store, account)
    finally:
        store.engine.dispose()
    if as_json:
        _emit(trees)
        return
    console = Console(width=200)
    for node in trees:
        top = Tree(_label(node))
        _add(top, node)
        console.print(top)


@command.command("show")
@_DB
@click.argument("session_id")
@_JSON
def show(db: str, session_id: str, as_json: bool) -> None:
    """One session, its lineage and its calls."""
    store = _store(db)
    try:
        row = store.get(session_id)
        if row is None:
            raise UsageError(f"no session {session_id}")
        lineage = store.lineage(session_id)
        calls = store.calls(session_id)
    finally:
        store.engine.dispose()
    value = {
        **session_json(row),
        "lineage": None if lineage is None else list(lineage),
        "calls": [
            {
                "exchange_id": c.exchange_id,
                "tape_dir": c.tape_dir,
                "method": c.method,
                "path": c.path,
                "model": c.model,
                "outcome": c.outcome,
                "client_status": c.client_status,
                "execution_status": c.execution_status,
                "participant_unknown": c.participant_unknown,
                "started_at": c.started_at.isoformat(),
            }
            for c in calls
        ],
    }
    if as_json:
        _emit(value)
        return
    for name in (
        "id",
        "account",
        "principal",
        "harness",
        "source_type",
        "source_id",
        "rule",
        "role",
        "parent_session_id",
        "first_seen_at",
        "last_seen_at",
        "closed_at",
    ):
        click.echo(f"{name:18} {value[name]}")
    click.echo(f"{'lineage':18} {value['lineage']}")
    for c in value["calls"]:
        click.echo(
            f"  {c['started_at']}  {c['method']} {c['path']}  {c['model']}  "
            f"{c['outcome']}/{c['client_status']}  {c['execution_status']}  {c['exchange_id']}"
        )

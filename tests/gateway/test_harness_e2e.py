"""Real harness runs through the gateway against the built-in mock model (`spawn-one`):
Claude Code and OpenCode produce child rows with their parents, Gemini CLI stays
source-keyed with no parent.

Each harness is launched exactly as `roller collect` launches it: its adapter's
`launch_plan`, run by `roller.collect.launcher.run_plan`, with the pinned binary from
roller's cache (`roller harness install`), a scratch HOME, TMPDIR and work dir, and
delegation offered (`capture_calls`). Only the network differs from collect: the base
URLs are the gateway's (`base_urls(gateway URL)`, the form each SDK expects) and every
provider key variable holds the harness's roller token (each adapter passes on only the
one its harness reads), as docs/gateway.md describes. These run on SQLite: the store's
backends are covered by the store and HTTP tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from roller.collect.launcher import run_plan
from roller.collect.session import CREDENTIAL_ENV, base_urls
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchRequest, ScratchDirs
from tests.gateway.conftest import GatewayFactory, RunningGateway
from tests.support.e2e import installed

pytestmark = pytest.mark.e2e

PROMPT = "Use a subagent to say hi"


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'gateway.db'}"


def launch(harness: str, gw: RunningGateway, token: str, model: str, tmp_path: Path) -> None:
    """Run `harness` through the gateway with its adapter's own launch plan."""
    adapter = adapter_for(harness)
    found = installed(harness)  # roller's cache, installed when missing
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    for d in (dirs.home, dirs.tmp, dirs.work):
        d.mkdir()
    plan = adapter.launch_plan(
        LaunchRequest(
            prompt=PROMPT,
            command=(),
            dirs=dirs,
            base_urls=base_urls(gw.url),
            credentials=dict.fromkeys(CREDENTIAL_ENV, gw.tokens[token]),
            model=model,
            capture_calls=True,
            timeout_s=180,
            install_dir=found.root,
        )
    )
    output = tmp_path / "harness"
    result = asyncio.run(run_plan(plan, output))
    stderr = (output / "stderr.txt").read_text(errors="replace")[-3000:]
    assert result.exit_code == 0, f"{harness}: {result}\n{stderr}"


def test_claude_code_subagent_rows(start_gateway: GatewayFactory, tmp_path: Path) -> None:
    gw = start_gateway()
    launch("claude-code", gw, "cc", "fake-model", tmp_path)
    rows = gw.rows()
    roots = [r for r in rows if r.role == "root"]
    assert len(roots) == 1, [(r.source_id, r.role) for r in rows]
    root = roots[0]
    children = [r for r in rows if r.parent_session_id == root.id]
    assert root.source_type == "claude-code" and root.parent_session_id is None
    assert len(children) >= 1 and len(rows) == 1 + len(children)
    for child in children:
        session, agent = child.source_id.rsplit(":", 1)
        assert session == root.source_id and agent.startswith("a") and child.role == "child"
    calls = gw.store.calls()
    by_session = {c.session_id for c in calls}
    assert by_session == {root.id, *(c.id for c in children)}
    assert all(c.outcome == "ok" and c.client_status == 200 for c in calls)
    # The tape says the same as the rows, call by call.
    tape = {ex.exchange_id: ex.request.annotations["gateway"] for ex in gw.tape().exchanges}
    assert all(tape[c.exchange_id]["session_id"] == c.session_id for c in calls)


def test_opencode_subagent_rows(start_gateway: GatewayFactory, tmp_path: Path) -> None:
    gw = start_gateway()
    launch("opencode", gw, "oc", "fake-model", tmp_path)
    rows = gw.rows()
    roots = [r for r in rows if r.role == "root"]
    assert len(roots) == 1, [(r.source_id, r.role, r.parent_session_id) for r in rows]
    root = roots[0]
    children = [r for r in rows if r.parent_session_id == root.id]
    assert root.source_id.startswith("ses_") and root.source_type == "opencode"
    assert len(children) == 1 and children[0].source_id.startswith("ses_")
    assert children[0].role == "child" and len(rows) == 2
    model_calls = [c for c in gw.store.calls() if c.path.endswith("/chat/completions")]
    assert {c.session_id for c in model_calls} == {root.id, children[0].id}


def test_gemini_cli_stays_source_keyed(start_gateway: GatewayFactory, tmp_path: Path) -> None:
    gw = start_gateway()
    launch("gemini-cli", gw, "gemini", "gemini-2.5-flash", tmp_path)
    (row,) = gw.rows()
    assert (row.source_type, row.source_id, row.parent_session_id, row.role) == (
        "source",
        "gemini-cli#1",
        None,
        None,
    )
    calls = gw.store.calls()
    assert len(calls) >= 2 and {c.session_id for c in calls} == {row.id}
    assert gw.store.lineage(row.id) is None

"""Real harness runs through the gateway against the built-in mock model (`spawn-one`):
Claude Code and OpenCode produce child rows with their parents, Gemini CLI stays
source-keyed with no parent.

The harness binaries are the pinned ones in roller's cache (`roller harness install`).
Launch lines are explicit here, taken from the probed offline command lines in the harness
notes (the adapters' launch plans are being written in parallel); each harness gets a
scratch HOME, TMPDIR and work dir, the gateway URL as its base URL and its roller token as
its API key, and nothing else of the network. These run on SQLite: the store's backends
are covered by the store and HTTP tests.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from roller.harnesses.install import cache_root
from tests.gateway.conftest import GatewayFactory

pytestmark = pytest.mark.e2e


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'gateway.db'}"


def binary(name: str, version: str, *candidates: str) -> Path:
    root = cache_root() / "harnesses" / f"{name}-{version}" / "node_modules"
    for candidate in candidates:
        path = root / candidate
        if path.exists():
            return path
    pytest.fail(
        f"{name} {version} is not installed under {root}: run `roller harness install {name}`"
    )


def scratch(tmp_path: Path) -> tuple[Path, Path, Path]:
    dirs = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for d in dirs:
        d.mkdir()
    return dirs


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8"}
    done = subprocess.run(
        argv,
        env={**base, **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{argv[0]} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def test_claude_code_subagent_rows(start_gateway: GatewayFactory, tmp_path: Path) -> None:
    claude = binary(
        "claude-code", "2.1.332", ".bin/claude", "@anthropic-ai/claude-code/bin/claude.exe"
    )
    gw = start_gateway()
    home, tmp, work = scratch(tmp_path)
    run(
        [
            str(claude),
            "-p",
            "Use a subagent to say hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "fake-model",
        ],
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "ANTHROPIC_BASE_URL": gw.url,
            "ANTHROPIC_API_KEY": gw.tokens["cc"],
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
        },
        work,
    )
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
    tape = {ex.exchange_id: ex.request["annotations"]["gateway"] for ex in gw.tape().exchanges}
    assert all(tape[c.exchange_id]["session_id"] == c.session_id for c in calls)


def test_opencode_subagent_rows(start_gateway: GatewayFactory, tmp_path: Path) -> None:
    opencode = binary("opencode", "1.18.33", ".bin/opencode", "opencode-ai/bin/opencode.exe")
    gw = start_gateway()
    home, tmp, work = scratch(tmp_path)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake local",
                "options": {"baseURL": gw.url + "/v1", "apiKey": gw.tokens["oc"]},
                "models": {"fake-model": {"name": "Fake Model", "tool_call": True}},
            }
        },
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "autoupdate": False,
        "share": "disabled",
    }
    (work / "opencode.json").write_text(json.dumps(config))
    run(
        [
            str(opencode),
            "run",
            "Use",
            "a",
            "subagent",
            "to",
            "say",
            "hi",
            "--model",
            "fake/fake-model",
            "--format",
            "json",
        ],
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "npm_config_registry": gw.url + "/npm-registry-not-here/",
        },
        work,
    )
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
    gemini = binary("gemini-cli", "0.61.0", ".bin/gemini", "@google/gemini-cli/dist/index.js")
    gw = start_gateway()
    home, tmp, work = scratch(tmp_path)
    settings = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    }
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    run(
        [str(gemini), "-m", "gemini-2.5-flash", "-p", "Use a subagent to say hi"],
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "GEMINI_API_KEY": gw.tokens["gemini"],
            "GOOGLE_GEMINI_BASE_URL": gw.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        },
        work,
    )
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

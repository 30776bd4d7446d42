"""The OpenClaw adapter's launch plan and native copy, as data (no binary runs here)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from roller.errors import UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.harnesses.openclaw import OpenClawAdapter

ADAPTER = OpenClawAdapter()


def _request(tmp_path: Path, **options: str) -> LaunchRequest:
    return LaunchRequest(
        prompt="-starts with a dash",
        command=(),
        dirs=ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work"),
        base_urls={"anthropic": "http://p", "openai": "http://p/v1", "gemini": "http://p"},
        credentials={"OPENAI_API_KEY": "sk-secret", "ANTHROPIC_API_KEY": "sk-ant"},
        model=None,
        capture_calls=True,
        timeout_s=240.0,
        install_dir=tmp_path / "install",
        options=options,
    )


def _config(plan_files: object) -> dict[str, object]:
    (config,) = [f for f in plan_files if f.path.name == "openclaw.json"]  # type: ignore[attr-defined]
    return json.loads(config.content)  # type: ignore[no-any-return]


def test_the_plan_runs_the_launcher_around_openclaw_agent(tmp_path: Path) -> None:
    plan = ADAPTER.launch_plan(_request(tmp_path))
    binary = str(tmp_path / "install" / "node_modules" / ".bin" / "openclaw")
    cut = plan.argv.index("--")
    assert plan.argv[:3] == (sys.executable, "-m", "roller.harnesses.openclaw.gateway")
    assert plan.argv[cut + 1 : cut + 5] == (binary, "agent", "--agent", "main")
    assert plan.argv[plan.argv.index("--drain-timeout") + 1] == "180"
    # the prompt travels in a file: one starting with `-` is never taken for a flag
    (prompt,) = [f for f in plan.files if f.path.name == "roller-prompt.txt"]
    assert prompt.content == "-starts with a dash"
    assert "-starts with a dash" not in plan.argv
    assert plan.env["PATH"].split(":")[0] == str(tmp_path / "install" / "node_modules" / ".bin")
    assert plan.env["NODE_COMPILE_CACHE"] == str(tmp_path / "install" / "node-compile-cache")
    assert plan.env["OPENCLAW_OFFLINE"] == "1" and plan.secret_env == {"OPENAI_API_KEY"}
    assert "OPENCLAW_GATEWAY_TOKEN" not in plan.env  # the launcher makes one per run


def test_the_config_names_the_key_never_its_value(tmp_path: Path) -> None:
    plan = ADAPTER.launch_plan(_request(tmp_path))
    text = json.dumps(_config(plan.files))
    assert "sk-secret" not in text
    config = _config(plan.files)
    provider = config["models"]["providers"]["roller"]  # type: ignore[index]
    assert provider["apiKey"] == "${OPENAI_API_KEY}"
    assert provider["baseUrl"] == "http://p/v1" and provider["api"] == "openai-completions"
    assert config["gateway"] == {  # type: ignore[comparison-overlap]
        "mode": "local",
        "bind": "loopback",
        "auth": {"mode": "token"},
        "controlUi": {"enabled": False},
    }
    assert "tools" not in config  # OpenClaw's default surface: Tool Search
    assert config["plugins"] == {"enabled": False}


def test_api_tool_search_and_agents_options(tmp_path: Path) -> None:
    agents = json.dumps({"roller-restricted": {"tools": {"allow": ["read"]}}})
    plan = ADAPTER.launch_plan(
        _request(tmp_path, api="anthropic-messages", tool_search="off", agents=agents)
    )
    config = _config(plan.files)
    provider = config["models"]["providers"]["roller"]  # type: ignore[index]
    assert (provider["api"], provider["baseUrl"], provider["apiKey"]) == (
        "anthropic-messages",
        "http://p",
        "${ANTHROPIC_API_KEY}",
    )
    assert plan.secret_env == {"ANTHROPIC_API_KEY"}
    assert config["tools"] == {"toolSearch": False}
    entries = config["agents"]["entries"]  # type: ignore[index]
    assert entries["main"] == {"subagents": {"allowAgents": ["roller-restricted"]}}
    assert entries["roller-restricted"] == {"tools": {"allow": ["read"]}}
    for bad, why in (("[1]", "JSON object"), ("{", "not JSON"), ('{"main": {}}', "redefine")):
        with pytest.raises(UsageError, match=why):
            ADAPTER.launch_plan(_request(tmp_path, agents=bad))
    with pytest.raises(UsageError, match="drain_timeout must be an integer"):
        ADAPTER.launch_plan(_request(tmp_path, drain_timeout="soon"))


def test_collect_native_copies_every_agent_store_consolidated(tmp_path: Path) -> None:
    dirs = ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work")
    oc = dirs.home / ".openclaw"
    for agent in ("main", "roller-restricted"):
        db = oc / "agents" / agent / "agent" / "openclaw-agent.sqlite"
        db.parent.mkdir(parents=True)
        con = sqlite3.connect(db)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE t (x)")
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()  # the row is still in -wal while this connection stays open
        (oc / "state").mkdir(exist_ok=True)
        sqlite3.connect(oc / "state" / "openclaw.sqlite").execute(
            "CREATE TABLE IF NOT EXISTS s (x)"
        )
        (dirs.home / ".roller").mkdir(exist_ok=True)
        (dirs.home / ".roller" / "openclaw-launch.json").write_text("{}")
        dest = tmp_path / "raw" / "native"
        ADAPTER.collect_native(dirs, dest)
        copy = dest / "openclaw" / "agents" / agent / "agent" / "openclaw-agent.sqlite"
        assert sqlite3.connect(copy).execute("SELECT x FROM t").fetchall() == [(1,)]
        assert not copy.with_name(copy.name + "-wal").exists()
        con.close()
    assert (dest / "openclaw" / "state" / "openclaw.sqlite").is_file()
    assert (dest / "openclaw-launch.json").read_text() == "{}"


def test_the_registry_launches_it() -> None:
    assert adapter_for("openclaw").pin.runtime is not None

"""`roller gateway token add`, `roller sessions list|tree|show`, `roller export calls
--gateway`, and `roller gateway` itself as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
from click.testing import CliRunner

from roller.cli.main import cli
from roller.errors import ConfigError
from roller.gateway.config import load_config
from roller.gateway.tokens import token_sha256
from tests.gateway.conftest import GatewayFactory
from tests.gateway.test_sessions_http import CC, CC_AGENT, S, claude


def test_token_add_appends_a_client_and_prints_the_token_once(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text('# my gateway\n[upstreams]\nanthropic = { url = "mock:spawn-one" }\n')
    args = ["gateway", "token", "add", "--config", str(path), "--principal", "alice"]
    result = CliRunner().invoke(cli, [*args, "--account", "acme", "--harness", "claude-code"])
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    assert token.startswith("rlr_") and token not in path.read_text()
    assert path.read_text().startswith("# my gateway\n")  # the file is appended to, not rewritten
    (client,) = load_config(path).clients
    assert (client.principal, client.harness, client.token_sha256) == (
        "alice",
        "claude-code",
        token_sha256(token),
    )
    bad = CliRunner().invoke(cli, [*args, "--account", "has space", "--harness", "opencode"])
    assert bad.exit_code != 0 and len(load_config(path).clients) == 1


def test_config_errors_are_clear(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text(
        '[upstreams]\nanthropic = { url = "https://x.example", key_env = "bad-name" }\n'
    )
    with pytest.raises(ConfigError, match="key_env"):
        load_config(path)
    path.write_text(
        '[[clients]]\nprincipal="a"\naccount="b"\nharness="nope"\ntoken_sha256="' + "0" * 64 + '"\n'
    )
    with pytest.raises(ConfigError, match="harness must be one of"):
        load_config(path)


def test_sessions_commands_and_gateway_export(
    start_gateway: GatewayFactory, db_url: str, tmp_path: Path
) -> None:
    gw = start_gateway()
    claude(gw, {CC: S})
    claude(gw, {CC: S, CC_AGENT: "a1"})
    gw.idle()
    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["sessions", "list", "--db", db_url, "--json"]).output)
    assert sorted(r["source_id"] for r in listed) == [S, f"{S}:a1"]
    tree = json.loads(runner.invoke(cli, ["sessions", "tree", "--db", db_url, "--json"]).output)
    (root,) = tree
    assert root["source_id"] == S and [c["source_id"] for c in root["children"]] == [f"{S}:a1"]
    child_id = root["children"][0]["id"]
    shown = json.loads(
        runner.invoke(cli, ["sessions", "show", "--db", db_url, child_id, "--json"]).output
    )
    assert shown["lineage"] == [root["id"]] and len(shown["calls"]) == 1
    text = runner.invoke(cli, ["sessions", "tree", "--db", db_url])
    assert text.exit_code == 0 and f"{S}:a1" in text.output

    out = tmp_path / "calls.jsonl"
    result = runner.invoke(cli, ["export", "calls", "--gateway", db_url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["participant"]["participant_id"] for r in records] == [root["id"], child_id]
    first = records[0]
    assert first["schema"] == "roller.export.call/v1" and first["export_status"] == "exportable"
    assert first["protocol"] == "anthropic-messages" and first["model"] == "fake-model"
    assert first["request"]["messages"][0]["role"] == "user" and first["response"]["content"]
    assert first["source"]["exchange_id"] == gw.store.calls()[0].exchange_id


def test_gateway_runs_as_a_process_and_stops_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text('[upstreams]\nanthropic = { url = "mock:spawn-one" }\n')
    token = (
        CliRunner()
        .invoke(
            cli,
            [
                "gateway",
                "token",
                "add",
                "--config",
                str(path),
                "--principal",
                "p",
                "--account",
                "a",
                "--harness",
                "claude-code",
            ],
        )
        .output.strip()
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "roller"),
            "gateway",
            "--config",
            str(path),
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("roller gateway: listening on http://127.0.0.1:"), first
        url = first.rsplit(" ", 1)[1].strip()
        client = anthropic.Anthropic(base_url=url, api_key=token, max_retries=0)
        client.messages.create(
            model="m",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={CC: S},
        )
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped" in out
    listed = CliRunner().invoke(
        cli, ["sessions", "list", "--db", str(tmp_path / "gateway.db"), "--json"]
    )
    assert [r["source_id"] for r in json.loads(listed.output)] == [S]

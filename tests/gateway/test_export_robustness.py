"""Issue 15 item 4, exports that abort: one bad record never stops `roller export calls
--gateway`. A call whose body Python's JSON reader refuses (a 5,001-digit integer, JSON
nested 100k deep) is exported with the reason, blocked; a record that cannot be built
at all is skipped and counted with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import roller.gateway.export as gateway_export
from roller.cli.main import cli
from tests.gateway.conftest import GatewayFactory, RunningGateway
from tests.gateway.test_sessions_http import S, claude
from tests.support.rawhttp import send


def _messages(gw: RunningGateway, body: bytes) -> None:
    headers = [
        ("x-api-key", gw.tokens["cc"]),
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
        ("x-claude-code-session-id", S),
    ]
    assert send(gw.url, "POST", "/v1/messages", headers, body).status is not None


def _export(db_url: str, out: Path, *flags: str) -> tuple[Any, list[dict[str, Any]]]:
    result = CliRunner().invoke(
        cli, ["export", "calls", "--gateway", db_url, "--out", str(out), *flags]
    )
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return result, records


def test_a_body_python_cannot_parse_does_not_abort_the_export(
    start_gateway: GatewayFactory, db_url: str, tmp_path: Path
) -> None:
    gw = start_gateway()
    claude(gw, {"x-claude-code-session-id": S})
    _messages(gw, b'{"model":"fake-model","max_tokens":' + b"7" * 5001 + b',"messages":[]}')
    _messages(gw, b'{"model":"fake-model","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    claude(gw, {"x-claude-code-session-id": S})
    gw.idle()
    result, records = _export(db_url, tmp_path / "calls.jsonl")
    assert result.exit_code == 0, result.output
    assert len(records) == 2 and {r["export_status"] for r in records} == {"exportable"}
    result, records = _export(db_url, tmp_path / "all.jsonl", "--include-blocked")
    assert result.exit_code == 0, result.output
    assert len(records) == 4
    big, deep = records[1], records[2]
    for record, why in ((big, "4300"), (deep, "nested")):
        assert record["export_status"] == "blocked" and record["request"] is None
        assert any(why in e["message"] for e in record["errors"]), record["errors"]


def test_a_record_that_cannot_be_built_is_skipped_and_counted(
    start_gateway: GatewayFactory, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = start_gateway()
    for _ in range(3):
        claude(gw, {"x-claude-code-session-id": S})
    gw.idle()
    second = gw.store.calls()[1].exchange_id
    real = gateway_export.decode_exchange

    def broken(sequence: int, exchange: Any, harness: str) -> Any:
        if exchange.exchange_id == second:
            raise RuntimeError("a decoder bug")
        return real(sequence, exchange, harness)

    monkeypatch.setattr(gateway_export, "decode_exchange", broken)
    result, records = _export(db_url, tmp_path / "calls.jsonl")
    assert result.exit_code == 0, result.output
    assert len(records) == 2
    assert "skipped 1 call(s)" in result.output and "RuntimeError: a decoder bug" in result.output

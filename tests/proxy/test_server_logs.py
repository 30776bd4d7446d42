"""Issue 15 item 5, credentials in logs and on the tape: a request aiohttp's parser refuses
(a control character in a header) is logged without any header value by `roller proxy`
and `roller gateway`; configured header and query names are redacted from the tape."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from roller.capture.tape import read_tape
from roller.cli.main import cli
from tests.support.rawhttp import send

ROLLER = str(Path(sys.executable).parent / "roller")
SECRET = "rlr_SECRETTOKEN0123456789"


def _serve(argv: list[str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [ROLLER, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "listening on" in first, first + (process.stderr.read() if process.stderr else "")
        yield first.rsplit(" ", 1)[1].strip(), process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)


def _broken_requests(url: str) -> None:
    for header in (
        b"x-api-key: " + SECRET.encode() + b"\x01tail",
        b"authorization: Bearer " + SECRET.encode() + b"\x7f",
        b"x-goog-api-key: " + SECRET.encode() + b"\x00",
    ):
        name, _, value = header.partition(b": ")
        send(url, "POST", "/v1/messages", [(name, value)], b"{}")


@pytest.fixture
def gateway_config(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text('[upstreams]\nanthropic = { url = "mock:spawn-one" }\n')
    args = ["gateway", "token", "add", "--config", str(path), "--principal", "p"]
    result = CliRunner().invoke(cli, [*args, "--account", "a", "--harness", "claude-code"])
    assert result.exit_code == 0
    return path


@pytest.mark.parametrize("server", ["proxy", "gateway"])
def test_a_header_aiohttp_refuses_is_never_logged_with_its_value(
    server: str, tmp_path: Path, gateway_config: Path
) -> None:
    if server == "proxy":
        argv = ["proxy", "--upstream", "http://127.0.0.1:9", "--tape", str(tmp_path / "tape")]
    else:
        argv = ["gateway", "--config", str(gateway_config), "--listen", "127.0.0.1:0"]
    for url, process in _serve(argv):
        _broken_requests(url)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        assert SECRET not in err and SECRET not in out
        assert "refused a malformed request" in err  # the refusal is still logged


def test_configured_header_and_query_names_are_redacted_from_the_tape(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    argv = ["proxy", "--upstream", "http://127.0.0.1:9", "--tape", str(tape)]
    for url, process in _serve([*argv, "--redact-header", "X-Key", "--redact-query", "k"]):
        send(url, "POST", "/v1/messages?k=secret-q&keep=1", [("x-key", "secret-h")], b"{}")
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    (exchange,) = read_tape(tape).exchanges
    assert exchange.request.redacted.headers == ("x-key",)
    assert exchange.request.redacted.query == ("k",) and exchange.request.query == (("keep", "1"),)
    for file in tape.iterdir():
        assert b"secret-" not in file.read_bytes()

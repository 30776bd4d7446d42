"""Issue 15 item 8, exposure: `roller gateway` refuses a non-loopback listen address
unless TLS is configured or `--allow-insecure-remote` is given, serves HTTPS with
`--tls-cert/--tls-key`; token bytes that are not UTF-8 get a 401, never a 500."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import trustme

from roller.cli.main import main
from tests.gateway.conftest import GatewayFactory
from tests.support.rawhttp import send

ROLLER = str(Path(sys.executable).parent / "roller")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text('[upstreams]\nanthropic = { url = "mock:spawn-one" }\n')
    return path


def test_a_remote_listen_address_needs_tls_or_an_explicit_flag(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for listen in ("0.0.0.0:0", "[::]:0", "192.0.2.1:0"):
        with pytest.raises(SystemExit) as exit_info:
            main(["gateway", "--config", str(config), "--listen", listen])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "--tls-cert" in err and "--allow-insecure-remote" in err
    assert not (config.parent / "gateway.db").exists()  # refused before anything opened


def _first_line(argv: list[str]) -> tuple[str, subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [ROLLER, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    return process.stdout.readline(), process


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)


def test_insecure_remote_listening_is_allowed_when_asked_for(config: Path) -> None:
    line, process = _first_line(
        ["gateway", "--config", str(config), "--listen", "0.0.0.0:0", "--allow-insecure-remote"]
    )
    try:
        assert line.startswith("roller gateway: listening on http://0.0.0.0:"), line
    finally:
        _stop(process)


def test_tls_serves_https(config: Path, tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    args = ["--tls-cert", str(cert_file), "--tls-key", str(key_file)]
    line, process = _first_line(
        ["gateway", "--config", str(config), "--listen", "127.0.0.1:0", *args]
    )
    try:
        assert line.startswith("roller gateway: listening on https://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[1].strip()
        context = ssl.create_default_context()
        ca.configure_trust(context)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/v1/messages", data=b"{}", context=context, timeout=30)
        assert refused.value.code == 401  # served over TLS (no token: refused)
    finally:
        _stop(process)


def test_a_certificate_needs_its_key(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["gateway", "--config", str(config), "--tls-cert", str(tmp_path / "cert.pem")])
    assert exit_info.value.code == 2 and "--tls-key" in capsys.readouterr().err


def test_token_bytes_that_are_not_utf8_get_a_401(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    for name in (b"x-api-key", b"authorization", b"x-goog-api-key"):
        value = b"rlr_\xff\xfe" if name != b"authorization" else b"Bearer rlr_\xff\xfe"
        response = send(gw.url, "POST", "/v1/messages", [(name, value)], b"{}")
        assert response.status == 401, (name, response)
    gw.idle()  # rows are written by the background writer
    assert [c.client_status for c in gw.store.calls()] == [401, 401, 401]

"""`roller proxy` as a user runs it: flags, refusal of remote listening, signals, kill -9."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from click.testing import CliRunner

from roller.capture.tape import read_tape
from roller.cli.main import cli, main
from roller.cli.serving import parse_listen
from roller.errors import UsageError
from roller.proxy.server import is_loopback
from tests.support.servers import BackgroundLoop

EVENT = b'data: {"type":"message_start"}\n\n'


def test_help_explains_the_command() -> None:
    result = CliRunner().invoke(cli, ["proxy", "--help"])
    assert result.exit_code == 0
    for phrase in ("--tape", "--upstream-anthropic", "--allow-remote", "x-roller-*"):
        assert phrase in result.output


def test_listen_addresses() -> None:
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert parse_listen("localhost:9") == ("localhost", 9)
    for bad in ("8080", ":80", "127.0.0.1:x", "127.0.0.1:70000"):
        with pytest.raises(UsageError):
            parse_listen(bad)
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_non_loopback_listen_is_refused_without_allow_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["proxy", "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--tape", str(tmp_path / "t")])
    assert exit_info.value.code == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


def test_bad_upstream_urls_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for upstream in ("ftp://x", "http://user:pw@127.0.0.1:9", "http://127.0.0.1:9/?key=1"):
        with pytest.raises(SystemExit) as exit_info:
            main(["proxy", "--upstream", upstream, "--tape", str(tmp_path / "t")])
        assert exit_info.value.code == 2
    assert "pw" not in capsys.readouterr().err


@pytest.fixture
def upstream(bg_loop: BackgroundLoop) -> Iterator[str]:
    never = asyncio.Event()

    async def quick(request: web.Request) -> web.Response:
        return web.json_response({"echo": (await request.json())["n"]})

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(EVENT)
        await never.wait()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", quick)
    app.router.add_post("/v1/messages", stream)
    yield bg_loop.serve(app)
    bg_loop.loop.call_soon_threadsafe(never.set)


def _start(upstream: str, tape: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "roller",
            "proxy",
            "--upstream",
            upstream,
            "--tape",
            str(tape),
            *list(extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("roller proxy: listening on http://127.0.0.1:"), line
    assert proc.stdout.readline().strip() == f"roller proxy: tape {tape.resolve()}"
    return proc, line.rsplit(" ", 1)[1].strip()


def _quick(url: str, n: int) -> dict[str, int]:
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps({"n": n}).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer sk-KILL-SECRET"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        result: dict[str, int] = json.loads(response.read())
        return result


async def _first_event(url: str) -> tuple[aiohttp.ClientSession, aiohttp.ClientResponse, bytes]:
    session = aiohttp.ClientSession()
    response = await session.post(url + "/v1/messages", json={"stream": True})
    return session, response, await response.content.readuntil(b"\n\n")


def test_kill_9_mid_stream_keeps_every_finished_exchange(
    bg_loop: BackgroundLoop, upstream: str, tmp_path: Path
) -> None:
    tape = tmp_path / "tape"
    proc, url = _start(upstream, tape)
    try:
        assert [_quick(url, n) for n in range(3)] == [{"echo": n} for n in range(3)]
        session, _response, first = bg_loop.run(_first_event(url))
        assert first == EVENT
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
    bg_loop.run(session.close())
    result = read_tape(tape)
    assert result.problems == ()
    *finished, in_flight = result.exchanges
    assert [json.loads(e.body) for e in finished] == [{"echo": n} for n in range(3)]
    assert all(e.outcome == "ok" for e in finished)
    assert in_flight.end is None  # it was in flight when the proxy died
    assert in_flight.response is not None and in_flight.body == EVENT
    assert b"sk-KILL-SECRET" not in b"".join(p.read_bytes() for p in tape.iterdir())


def test_sigterm_stops_cleanly_and_ends_what_was_in_flight(
    bg_loop: BackgroundLoop, upstream: str, tmp_path: Path
) -> None:
    tape = tmp_path / "tape"
    proc, url = _start(upstream, tape, "--shutdown-grace", "0.2")
    try:
        assert _quick(url, 7) == {"echo": 7}
        session, _, first = bg_loop.run(_first_event(url))
        assert first == EVENT
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    bg_loop.run(session.close())
    assert proc.returncode == 0, err
    assert "stopped after 2 exchanges; tape closed" in out
    result = read_tape(tape)
    assert result.problems == ()
    assert [e.outcome for e in result.exchanges] == ["ok", "proxy_shutdown"]
    assert result.exchanges[1].body == EVENT

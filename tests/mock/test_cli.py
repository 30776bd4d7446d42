"""`roller mock-model` as a user runs it: a real process, a real port, real signals."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from roller.cli.main import main
from tests.mock.http import post_json

ROLLER = [sys.executable, "-m", "roller", "mock-model"]


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*ROLLER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line + process.stderr.read()  # type: ignore[union-attr]
    return process, line.rsplit(" ", 1)[1].strip()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_until_a_signal_then_exits_cleanly(sig: signal.Signals) -> None:
    process, url = start("--listen", "127.0.0.1:0", "--scenario", "spawn-one")
    try:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "go"}],
            "tools": [
                {"type": "function", "function": {"name": "task", "parameters": {"type": "object"}}}
            ],
        }
        status, reply = post_json(url + "/v1/chat/completions", body)
        assert status == 200
        assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "task"
    finally:
        process.send_signal(sig)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "200 POST /v1/chat/completions model=m turn=0 rule='root: spawn' tool_calls task" in err
    assert "stopped after 1 requests" in err
    assert "Traceback" not in err


def test_quiet_and_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[[rules]]\ntext = "from a file"\n')
    process, url = start("--scenario", str(path), "--quiet", "--delay-ms", "1")
    try:
        _, reply = post_json(url + "/v1/chat/completions", {"model": "m", "messages": []})
        assert reply["choices"][0]["message"]["content"] == "from a file"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 0 and "POST" not in err


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console script's entry point, in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        main(["mock-model", *args])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_help_lists_the_builtin_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_in_process(capsys, "--help")
    assert code == 0
    for name in ("plain", "spawn-one", "spawn-nested", "spawn-then-wait", "tool-error"):
        assert f"\n  {name} " in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "no-such"], "roller: error: no scenario 'no-such'"),
        (["--listen", "localhost"], "roller: error: --listen must be HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "roller: error: --listen must be HOST:PORT"),
        (["--delay-ms", "-3"], "Invalid value for '--delay-ms'"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _, err = run_in_process(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_bad_scenario_file_names_the_file_and_rule(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('[[rules]]\nname = "oops"\ntool_calls = [{ role = "spawn" }]\n')
    code, _, err = run_in_process(capsys, "--scenario", str(path))
    assert code == 2
    assert f"{path}: rule 1 (oops): tool call 1: role spawn needs `prompt`" in err


def test_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            [*ROLLER, "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 2
    assert f"roller: error: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "address already in use" in result.stderr
    assert "Traceback" not in result.stderr

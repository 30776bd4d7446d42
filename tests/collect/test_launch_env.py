"""Issue 15 item 7, the user's environment on disk: a launch record keeps the values of
what roller itself set and only the names of what the harness inherited, for every
harness; a secret in an arbitrary variable of the user's never reaches the run dir."""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

from tests.support.captures import roller

from roller.harnesses.base import LaunchPlan


def test_a_generic_command_never_writes_the_user_s_secrets(tmp_path: Path) -> None:
    secret = "s3cr3t-" + secrets.token_hex(16)
    env = {**os.environ, "MY_SERVICE_TOKEN": secret, "AWS_SECRET_ACCESS_KEY": secret + "-aws"}
    run_dir = tmp_path / "run"
    proc = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        "mock:spawn-one",
        "--capture-calls",
        "--capture-debug",
        "full",
        "--run-dir",
        str(run_dir),
        "--",
        sys.executable,
        "-c",
        "import os; assert os.environ['MY_SERVICE_TOKEN']",  # the command still gets it
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr
    (launch,) = run_dir.rglob("launch.json")
    record = json.loads(launch.read_text())
    assert "MY_SERVICE_TOKEN" in record["inherited_env"]
    assert "MY_SERVICE_TOKEN" not in record["env"]
    assert record["env"]["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_the_record_keeps_roller_s_values_and_inherited_names(tmp_path: Path) -> None:
    from roller.collect.launcher import recorded_environment  # new in issue 15

    inherited = {"PATH": "/usr/bin", "HOME": "/home/u", "DB_PASSWORD": "hunter2"}
    plan = LaunchPlan(
        argv=("x",),
        env={
            "PATH": "/usr/bin",  # as inherited
            "HOME": str(tmp_path),  # roller's scratch HOME
            "DB_PASSWORD": "hunter2",
            "OPENAI_API_KEY": "sk-real",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
        },
        cwd=tmp_path,
        timeout_s=1,
        secret_env=frozenset({"OPENAI_API_KEY"}),
    )
    env, names = recorded_environment(plan, inherited)
    assert env == {
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": "<secret>",
        "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
    }
    assert names == ["DB_PASSWORD", "PATH"]

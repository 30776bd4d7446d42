"""The Claude Code launch plan as data, and the native log copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchPlan, LaunchRequest, ScratchDirs
from roller.harnesses.claude_code import QUIET_ENV, ClaudeCodeAdapter

from .claude_code_fixtures import native


def _request(tmp_path: Path, **changes: object) -> LaunchRequest:
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    values: dict[str, object] = {
        "prompt": "-- do it",
        "command": (),
        "dirs": dirs,
        "base_urls": {
            "anthropic": "http://127.0.0.1:9",
            "openai": "http://127.0.0.1:9/v1",
            "gemini": "http://127.0.0.1:9",
        },
        "credentials": {"ANTHROPIC_API_KEY": "sk-test-a", "OPENAI_API_KEY": "sk-test-o"},
        "model": None,
        "capture_calls": True,
        "timeout_s": 30.0,
        "install_dir": tmp_path / "install",
    }
    values.update(changes)
    return LaunchRequest(**values)  # type: ignore[arg-type]


def _flag(plan: LaunchPlan, flag: str) -> str | None:
    argv = list(plan.argv)
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_registered_with_an_exact_npm_pin() -> None:
    adapter = adapter_for("claude-code")
    assert isinstance(adapter, ClaudeCodeAdapter)
    assert (adapter.pin.registry, adapter.pin.package) == ("npm", "@anthropic-ai/claude-code")
    assert adapter.pin.version == "2.1.332"
    assert (adapter.subtasks, adapter.coverage_basis) == ("supported", "per_message_id")


def test_headless_plan_in_the_scratch_dirs(tmp_path: Path) -> None:
    req = _request(tmp_path)
    plan = ClaudeCodeAdapter().launch_plan(req)
    assert plan.argv[0] == str(tmp_path / "install" / "node_modules" / ".bin" / "claude")
    assert plan.argv[1:5] == ("-p", "--output-format", "stream-json", "--verbose")
    # The prompt goes on stdin, so one starting with '-' is never taken for a flag.
    assert plan.stdin == b"-- do it" and "-- do it" not in plan.argv
    assert plan.cwd == req.dirs.work and plan.timeout_s == 30.0
    assert plan.env["HOME"] == str(req.dirs.home) and plan.env["TMPDIR"] == str(req.dirs.tmp)
    assert plan.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    for key, value in QUIET_ENV.items():
        assert plan.env[key] == value
    assert _flag(plan, "--allowedTools") == "Bash,Read,Write,Edit"
    assert "--disallowedTools" not in plan.argv  # --capture-calls: subagents allowed
    assert "IS_SANDBOX" not in plan.env


def test_only_anthropic_credentials_pass_and_they_are_secret(tmp_path: Path) -> None:
    plan = ClaudeCodeAdapter().launch_plan(_request(tmp_path))
    assert plan.env["ANTHROPIC_API_KEY"] == "sk-test-a"
    assert "OPENAI_API_KEY" not in plan.env
    assert plan.secret_env == frozenset({"ANTHROPIC_API_KEY"})


def test_without_capture_calls_the_agent_tool_is_denied(tmp_path: Path) -> None:
    plan = ClaudeCodeAdapter().launch_plan(_request(tmp_path, capture_calls=False))
    assert _flag(plan, "--disallowedTools") == "Agent"


def test_options_become_flags(tmp_path: Path) -> None:
    options = {
        "agents": '{"x": {"description": "d", "prompt": "p"}}',
        "allowed-tools": "",
        "permission-mode": "bypassPermissions",
        "max-turns": "3",
    }
    plan = ClaudeCodeAdapter().launch_plan(_request(tmp_path, options=options, model="m-1"))
    assert _flag(plan, "--agents") == options["agents"]
    assert "--allowedTools" not in plan.argv  # an empty value drops the default
    assert _flag(plan, "--permission-mode") == "bypassPermissions"
    assert plan.env["IS_SANDBOX"] == "1"  # needed to bypass permissions as root
    assert _flag(plan, "--max-turns") == "3"
    assert _flag(plan, "--model") == "m-1"


def test_unknown_option_and_missing_install_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown claude-code option"):
        ClaudeCodeAdapter().launch_plan(_request(tmp_path, options={"nope": "1"}))
    with pytest.raises(HarnessError, match="roller harness install claude-code"):
        ClaudeCodeAdapter().launch_plan(_request(tmp_path, install_dir=None))


def test_collect_native_copies_the_projects_tree_without_following_links(tmp_path: Path) -> None:
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    projects.parent.mkdir(parents=True)
    shutil.copytree(native("single") / "projects", projects)
    secret = tmp_path / "outside.txt"
    secret.write_text("not a transcript")
    (projects / "link.jsonl").symlink_to(secret)
    (home / ".claude.json").write_text("{}")
    dest = tmp_path / "dest"
    dirs = ScratchDirs(home=home, tmp=tmp_path / "tmp", work=tmp_path / "work")
    ClaudeCodeAdapter().collect_native(dirs, dest)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    original = sorted(
        ("projects/" + p.relative_to(projects).as_posix())
        for p in projects.rglob("*")
        if p.is_file() and not p.is_symlink()
    )
    assert copied == original
    assert not (dest / "projects" / "link.jsonl").is_symlink()
    assert not (dest / ".claude.json").exists()


def test_collect_native_without_transcripts_copies_nothing(tmp_path: Path) -> None:
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    ClaudeCodeAdapter().collect_native(dirs, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()

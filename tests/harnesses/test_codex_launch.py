"""The Codex launch plan as data, and the copy of its native logs (real SQLite, real files)."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchPlan, LaunchRequest, ScratchDirs
from roller.harnesses.codex import CodexAdapter
from roller.harnesses.codex.native import read_native

KEY = "sk-roller-test-value"
ROOT = "01a228f6-f4fe-7253-be35-eb9ed07ba9c8"


def _request(tmp_path: Path, **changes: Any) -> LaunchRequest:
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    values: dict[str, Any] = {
        "prompt": "--looks-like-a-flag: do the task",
        "command": (),
        "dirs": dirs,
        "base_urls": {
            "anthropic": "http://127.0.0.1:9",
            "openai": "http://127.0.0.1:9/v1",
            "gemini": "http://127.0.0.1:9",
        },
        "credentials": {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "not-for-codex"},
        "model": "mock-model",
        "capture_calls": True,
        "timeout_s": 30.0,
        "install_dir": tmp_path / "install",
        "options": {},
    }
    values.update(changes)
    return LaunchRequest(**values)


def _config(plan: LaunchPlan) -> dict[str, Any]:
    (file,) = plan.files
    assert file.path == Path(plan.env["CODEX_HOME"]) / "config.toml"
    return tomllib.loads(file.content)


def test_registered_under_its_name() -> None:
    adapter = adapter_for("codex")
    assert isinstance(adapter, CodexAdapter)
    assert (adapter.pin.registry, adapter.pin.package, adapter.pin.version) == (
        "npm",
        "@openai/codex",
        "0.171.0",
    )


def test_exec_with_the_prompt_on_stdin_and_only_scratch_environment(tmp_path: Path) -> None:
    request = _request(tmp_path)
    plan = CodexAdapter().launch_plan(request)
    binary = str(tmp_path / "install" / "node_modules" / ".bin" / "codex")
    assert plan.argv == (binary, "exec", "--skip-git-repo-check", "--json", "-")
    assert plan.stdin == request.prompt.encode()  # never parsed as a flag
    assert plan.cwd == request.dirs.work
    assert plan.env["HOME"] == str(request.dirs.home)
    assert plan.env["CODEX_HOME"] == str(request.dirs.home / ".codex")
    assert plan.env["OPENAI_API_KEY"] == KEY
    assert plan.secret_env == frozenset({"OPENAI_API_KEY"})
    assert "ANTHROPIC_API_KEY" not in plan.env
    assert set(plan.env) == {
        "HOME",
        "TMPDIR",
        "PATH",
        "TERM",
        "LANG",
        "NO_COLOR",
        "CODEX_HOME",
        "CODEX_ROLLOUT_TRACE_ROOT",
        "OPENAI_API_KEY",
    }
    # Codex writes its rollout trace inside the scratch CODEX_HOME
    assert plan.env["CODEX_ROLLOUT_TRACE_ROOT"] == str(
        request.dirs.home / ".codex" / "rollout-trace"
    )
    assert KEY not in plan.files[0].content  # the key is read from the environment only


def test_config_points_one_responses_provider_at_the_proxy(tmp_path: Path) -> None:
    config = _config(CodexAdapter().launch_plan(_request(tmp_path)))
    assert config["model_provider"] == "roller" and config["model"] == "mock-model"
    assert config["model_providers"]["roller"] == {
        "name": "roller",
        "base_url": "http://127.0.0.1:9/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
        "request_max_retries": 0,
        "stream_max_retries": 0,
        "supports_websockets": False,
    }
    # nothing but the proxy: no plugin sync, no update check, no analytics
    assert config["features"] == {"plugins": False, "multi_agent_v2": False}
    assert config["check_for_update_on_startup"] is False
    assert config["analytics"] == {"enabled": False}
    assert (config["approval_policy"], config["sandbox_mode"]) == ("never", "workspace-write")
    assert "agents" not in config  # v1 subagents: Codex's default


def test_model_is_left_to_codex_when_not_given(tmp_path: Path) -> None:
    assert "model" not in _config(CodexAdapter().launch_plan(_request(tmp_path, model=None)))


def test_v2_and_depth_options(tmp_path: Path) -> None:
    v2 = _config(CodexAdapter().launch_plan(_request(tmp_path, options={"multi-agent": "v2"})))
    assert v2["features"]["multi_agent_v2"] is True
    deep = _config(CodexAdapter().launch_plan(_request(tmp_path, options={"max-depth": "2"})))
    assert deep["agents"] == {"max_depth": 2}
    sandbox = _config(
        CodexAdapter().launch_plan(_request(tmp_path, options={"sandbox": "read-only"}))
    )
    assert sandbox["sandbox_mode"] == "read-only"


def test_agent_tools_exec_moves_v2_tools_into_the_scripts(tmp_path: Path) -> None:
    """`[features.multi_agent_v2] non_code_mode_only = false` (probed 2026-12-01: the
    collaboration tools become nested tools of `exec`); the table replaces the scalar."""
    request = _request(tmp_path, options={"agent-tools": "exec", "multi-agent": "v2"})
    config = _config(CodexAdapter().launch_plan(request))
    assert config["features"] == {
        "plugins": False,
        "multi_agent_v2": {"enabled": True, "non_code_mode_only": False},
    }
    v1 = _config(CodexAdapter().launch_plan(_request(tmp_path, options={"agent-tools": "exec"})))
    assert v1["features"]["multi_agent_v2"] == {"enabled": False, "non_code_mode_only": False}
    default = _config(CodexAdapter().launch_plan(_request(tmp_path)))
    assert default["features"]["multi_agent_v2"] is False  # direct: Codex's own default


def test_without_capture_calls_no_delegation_tool_is_offered(tmp_path: Path) -> None:
    request = _request(tmp_path, capture_calls=False, options={"multi-agent": "v2"})
    config = _config(CodexAdapter().launch_plan(request))
    assert config["agents"] == {"enabled": False}
    assert config["features"]["multi_agent_v2"] is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "blue"}, "unknown codex option"),
        ({"multi-agent": "v3"}, "multi-agent must be one of v1, v2"),
        ({"max-depth": "0"}, "max-depth must be an integer"),
        ({"max-depth": "two"}, "max-depth must be an integer"),
        ({"sandbox": "none"}, "sandbox must be one of"),
        ({"agent-tools": "nested"}, "agent-tools must be one of direct, exec"),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        CodexAdapter().launch_plan(_request(tmp_path, options=options))


def test_missing_inputs_are_explicit_errors(tmp_path: Path) -> None:
    adapter = CodexAdapter()
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        adapter.launch_plan(_request(tmp_path, credentials={}))
    with pytest.raises(UsageError, match="needs a prompt"):
        adapter.launch_plan(_request(tmp_path, prompt=None))
    with pytest.raises(HarnessError, match="roller harness install codex"):
        adapter.launch_plan(_request(tmp_path, install_dir=None))


def test_resume_names_the_root_thread_never_last(tmp_path: Path) -> None:
    adapter = CodexAdapter()
    plan = adapter.resume_plan(_request(tmp_path), ROOT)
    assert plan.argv[1:] == ("exec", "resume", "--skip-git-repo-check", "--json", ROOT, "-")
    assert "--last" not in plan.argv
    with pytest.raises(UsageError, match="not a thread uuid"):
        adapter.resume_plan(_request(tmp_path), "--last")


def _wal_db(path: Path) -> sqlite3.Connection:
    """A Codex-shaped state DB whose rows live only in its WAL (checkpoints off)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, source TEXT "
        "NOT NULL, thread_source TEXT, agent_path TEXT, agent_nickname TEXT)"
    )
    conn.execute(
        "CREATE TABLE thread_spawn_edges (parent_thread_id TEXT NOT NULL, child_thread_id "
        "TEXT NOT NULL PRIMARY KEY, status TEXT NOT NULL)"
    )
    conn.commit()
    conn.execute(
        "INSERT INTO threads VALUES (?, ?, 'exec', 'user', NULL, NULL)",
        (ROOT, f"/x/rollout-2026-11-29T20-20-02-{ROOT}.jsonl"),
    )
    conn.commit()
    return conn


def test_collect_native_snapshots_the_state_db_with_its_wal(tmp_path: Path) -> None:
    request = _request(tmp_path)
    home = request.dirs.home / ".codex"
    sessions = home / "sessions" / "2026" / "11" / "29"
    sessions.mkdir(parents=True)
    (sessions / f"rollout-2026-11-29T20-20-02-{ROOT}.jsonl").write_text(
        f'{{"ordinal":0,"type":"session_meta","payload":{{"id":"{ROOT}","thread_source":"user",'
        '"source":"exec"}}\n'
    )
    writer = _wal_db(home / "state_5.sqlite")  # still open: the row is only in the WAL
    try:
        assert (home / "state_5.sqlite-wal").stat().st_size > 0
        dest = tmp_path / "raw" / "native"
        CodexAdapter().collect_native(request.dirs, dest)
    finally:
        writer.close()
    assert sorted(p.name for p in dest.iterdir()) == ["sessions", "state_5.sqlite"]
    with sqlite3.connect(dest / "state_5.sqlite") as copy:
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert copy.execute("SELECT id FROM threads").fetchall() == [(ROOT,)]
    capture = read_native(dest)
    assert capture.problems == () and [p.key for p in capture.participants] == [ROOT]
    assert sorted(p.name for p in dest.iterdir()) == ["sessions", "state_5.sqlite"]  # read-only


def test_collect_native_copies_each_traces_event_log_not_its_payloads(tmp_path: Path) -> None:
    request = _request(tmp_path)
    traces = request.dirs.home / ".codex" / "rollout-trace"
    for name in ("trace-a-1", "trace-b-2"):
        (traces / name / "payloads").mkdir(parents=True)
        (traces / name / "trace.jsonl").write_text(f'{{"seq":1,"name":"{name}"}}\n')
        (traces / name / "manifest.json").write_text("{}")
        (traces / name / "payloads" / "000001.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    dest = tmp_path / "raw" / "native"
    CodexAdapter().collect_native(request.dirs, dest)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert copied == [
        "rollout-trace/trace-a-1/manifest.json",
        "rollout-trace/trace-a-1/trace.jsonl",
        "rollout-trace/trace-b-2/manifest.json",
        "rollout-trace/trace-b-2/trace.jsonl",
    ]


def test_a_state_db_that_cannot_be_copied_is_reported_by_the_reader(tmp_path: Path) -> None:
    request = _request(tmp_path)
    home = request.dirs.home / ".codex"
    home.mkdir(parents=True)
    (home / "state_5.sqlite").write_bytes(b"this is not a database" * 100)
    dest = tmp_path / "native"
    CodexAdapter().collect_native(request.dirs, dest)
    capture = read_native(dest)
    assert [p.code for p in capture.problems if "state_5.sqlite" in p.message] == ["missing_file"]
    assert any(
        "state_5.sqlite is missing (copy failed: file is not a database)" in p.message
        for p in capture.problems
    )

"""The OpenCode adapter's launch plan (data) and its store consolidation (real SQLite)."""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchPlan, LaunchRequest, ScratchDirs
from roller.harnesses.opencode import OpenCodeAdapter, consolidate_db
from roller.harnesses.opencode.store import read_store

from .opencode_fixtures import DATA

KEY = "sk-test-3f9a1c"


def _dirs(tmp_path: Path) -> ScratchDirs:
    dirs = ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work")
    for d in (dirs.home, dirs.tmp, dirs.work):
        d.mkdir(parents=True)
    return dirs


def _plan(tmp_path: Path, **changes: object) -> LaunchPlan:
    fields: dict[str, object] = {
        "prompt": 'Use a subagent\nto say  "hi"',
        "command": (),
        "dirs": _dirs(tmp_path),
        "base_urls": {"openai": "http://127.0.0.1:4321/v1", "anthropic": "x", "gemini": "y"},
        "credentials": {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "sk-ant-other"},
        "model": None,
        "capture_calls": True,
        "timeout_s": 90.0,
        "install_dir": tmp_path / "install",
    }
    fields.update(changes)
    return OpenCodeAdapter().launch_plan(LaunchRequest(**fields))  # type: ignore[arg-type]


def _config(plan: LaunchPlan) -> dict[str, object]:
    (file,) = plan.files
    assert file.path.name == "opencode.json"
    value = json.loads(file.content)
    assert isinstance(value, dict)
    return value


def test_registered_once() -> None:
    adapter = adapter_for("opencode")
    assert isinstance(adapter, OpenCodeAdapter)
    assert (adapter.pin.registry, adapter.pin.package, adapter.pin.version) == (
        "npm",
        "opencode-ai",
        "1.18.33",
    )
    assert adapter.subtasks == "supported"
    assert adapter.coverage_basis == "per_session_assistant_count"


def test_launch_plan(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    home = tmp_path / "home"
    assert plan.argv == (
        str(tmp_path / "install" / "node_modules" / ".bin" / "opencode"),
        "run",
        "--model",
        "roller/gpt-4.1-mini",
        "--format",
        "json",
        "--print-logs",
        "--log-level",
        "INFO",
    )
    # The prompt goes byte for byte on stdin, never as argv words.
    assert plan.stdin == b'Use a subagent\nto say  "hi"'
    assert plan.cwd == tmp_path / "work" and plan.timeout_s == 90.0
    assert plan.files[0].path == home / ".config" / "opencode" / "opencode.json"
    env = dict(plan.env)
    assert env["HOME"] == str(home) and env["TMPDIR"] == str(tmp_path / "tmp")
    for name in ("AUTOUPDATE", "MODELS_FETCH", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE"):
        assert env[f"OPENCODE_DISABLE_{name}"] == "1"
    assert env["OPENCODE_DISABLE_CLAUDE_CODE"] == "1"
    assert env["npm_config_registry"] == "http://127.0.0.1:9/"
    assert "OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS" not in env
    # Only the key OpenCode uses, marked secret; other providers' keys stay out.
    assert env["OPENAI_API_KEY"] == KEY and plan.secret_env == {"OPENAI_API_KEY"}
    assert "ANTHROPIC_API_KEY" not in env


def test_config_points_at_the_proxy_and_holds_no_secret(tmp_path: Path) -> None:
    plan = _plan(tmp_path, model="mock-model")
    assert KEY not in plan.files[0].content
    config = _config(plan)
    provider = config["provider"]["roller"]  # type: ignore[index]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {
        "baseURL": "http://127.0.0.1:4321/v1",
        "apiKey": "{env:OPENAI_API_KEY}",
    }
    assert provider["models"] == {"mock-model": {"name": "mock-model", "tool_call": True}}
    assert config["model"] == config["small_model"] == "roller/mock-model"
    assert config["enabled_providers"] == ["roller"]
    assert (config["autoupdate"], config["share"]) == (False, "disabled")
    assert "permission" not in config  # OpenCode's own task rules: allowed, depth 1


def test_without_capture_calls_the_task_tool_is_denied(tmp_path: Path) -> None:
    assert _config(_plan(tmp_path, capture_calls=False))["permission"] == {"task": "deny"}


def test_without_a_key_none_is_configured(tmp_path: Path) -> None:
    plan = _plan(tmp_path, credentials={})
    provider = _config(plan)["provider"]["roller"]  # type: ignore[index]
    assert "apiKey" not in provider["options"]
    assert "OPENAI_API_KEY" not in plan.env


def test_a_prompt_and_an_install_are_required(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        _plan(tmp_path / "a", prompt=None)
    with pytest.raises(UsageError):
        _plan(tmp_path / "b", prompt="  ")
    with pytest.raises(HarnessError):
        _plan(tmp_path / "c", install_dir=None)


def _wal_store(directory: Path) -> Path:
    """A WAL-mode copy of a real store with rows left in its WAL, as OpenCode leaves it."""
    db = directory / "opencode.db"
    db.write_bytes(gzip.decompress((DATA / "single" / "native" / "opencode.db.gz").read_bytes()))
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE session SET title = 'only in the wal' WHERE parent_id IS NULL")
    writer.commit()
    # Copy the files while the writer still holds them open, so the WAL is not
    # checkpointed into the main file: exactly the state after OpenCode exits.
    snapshot = directory / "snapshot"
    snapshot.mkdir()
    for suffix in ("", "-wal", "-shm"):
        source = db.with_name(db.name + suffix)
        (snapshot / source.name).write_bytes(source.read_bytes())
    writer.close()
    return snapshot / "opencode.db"


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def test_consolidation_keeps_the_rows_still_in_the_wal(tmp_path: Path) -> None:
    db = _wal_store(tmp_path)
    assert db.with_name("opencode.db-wal").stat().st_size > 0
    before = _digests(db.parent)
    dest = tmp_path / "native" / "opencode.db"
    dest.parent.mkdir()
    consolidate_db(db, dest)
    assert _digests(db.parent) == before  # the harness's files were never opened
    assert sorted(p.name for p in dest.parent.iterdir()) == ["opencode.db"]
    with closing(sqlite3.connect(f"{dest.as_uri()}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    titles = {s.title for s in read_store(dest).sessions if s.parent_id is None}
    assert titles == {"only in the wal"}


def test_collect_native_copies_store_and_log(tmp_path: Path) -> None:
    dirs = _dirs(tmp_path)
    data = dirs.home / ".local" / "share" / "opencode"
    (data / "log").mkdir(parents=True)
    (data / "log" / "2026-11-29T201428.log").write_text("INFO started\n")
    snapshot = _wal_store(tmp_path)
    for p in snapshot.parent.iterdir():
        (data / p.name).write_bytes(p.read_bytes())
    dest = tmp_path / "raw" / "native"
    OpenCodeAdapter().collect_native(dirs, dest)
    assert (dest / "log" / "2026-11-29T201428.log").read_text() == "INFO started\n"
    native = OpenCodeAdapter().read_native(dest)
    assert native is not None and native.problems == () and len(native.participants) == 2


def test_collect_native_without_a_store_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "raw" / "native"
    OpenCodeAdapter().collect_native(_dirs(tmp_path), dest)
    assert list(dest.iterdir()) == []
    native = OpenCodeAdapter().read_native(dest)
    assert native is not None and native.lifecycle.status == "unknown"


def test_an_unreadable_store_is_kept_as_it_was(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "opencode.db").write_bytes(b"not a database" * 500)
    (source / "opencode.db-wal").write_bytes(b"junk")
    dest = tmp_path / "native" / "opencode.db"
    dest.parent.mkdir()
    consolidate_db(source / "opencode.db", dest)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["opencode.db", "opencode.db-wal"]
    (problem,) = read_store(dest).problems
    assert problem.code == "unreadable_file" and "not a consolidated copy" in problem.message


def test_custom_agents_are_served_through_the_proxy(tmp_path: Path) -> None:
    agents = {
        "roller-restricted": {
            "mode": "subagent",
            "model": "mock-small",
            "permission": {"*": "deny"},
        },
        "helper": {"mode": "subagent", "model": "roller/mock-tiny"},
        "elsewhere": {"mode": "subagent", "model": "anthropic/claude-x"},
        "same": {"mode": "subagent"},
    }
    config = _config(_plan(tmp_path, model="mock-model", options={"agents": json.dumps(agents)}))
    agent = config["agent"]
    assert agent["roller-restricted"] == {  # type: ignore[index]
        "mode": "subagent",
        "model": "roller/mock-small",
        "permission": {"*": "deny"},
    }
    assert agent["helper"]["model"] == "roller/mock-tiny"  # type: ignore[index]
    assert agent["elsewhere"]["model"] == "anthropic/claude-x"  # type: ignore[index]
    models = config["provider"]["roller"]["models"]  # type: ignore[index]
    assert sorted(models) == ["mock-model", "mock-small", "mock-tiny"]


@pytest.mark.parametrize(
    "options",
    [{"agents": "{not json"}, {"agents": "[1]"}, {"agents": '{"a": 1}'}, {"bogus": "1"}],
)
def test_bad_options_are_usage_errors(tmp_path: Path, options: dict[str, str]) -> None:
    with pytest.raises(UsageError):
        _plan(tmp_path, options=options)

"""The launch checks and copies every installed harness shares (`launch`, `native_files`)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapters
from roller.harnesses.base import HarnessAdapter, LaunchRequest, ScratchDirs
from roller.harnesses.install import bin_path
from roller.harnesses.launch import harness_env
from roller.harnesses.native_files import copy_tree, snapshot_sqlite

INSTALLED = [a for a in adapters() if a.pin.registry != "none"]


def _request(tmp_path: Path, **changes: object) -> LaunchRequest:
    fields: dict[str, object] = {
        "prompt": "say done",
        "command": (),
        "dirs": ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work"),
        "base_urls": {"anthropic": "http://a", "openai": "http://o/v1", "gemini": "http://g"},
        "credentials": {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"},
        "model": None,
        "capture_calls": True,
        "timeout_s": 30.0,
        "install_dir": tmp_path / "install",
    }
    fields.update(changes)
    return LaunchRequest(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("adapter", INSTALLED, ids=lambda a: a.name)
def test_every_installed_harness_refuses_the_same_requests(
    adapter: HarnessAdapter, tmp_path: Path
) -> None:
    plan = adapter.launch_plan(_request(tmp_path))
    binary = bin_path(adapter.pin, tmp_path / "install")
    # the pinned binary, (a harness that is an SDK: DeepSeek) its venv's interpreter, or
    # (OpenClaw's Gateway) a roller launcher module that runs the pinned binary
    assert plan.argv[0] in (str(binary), str(binary.parent / "python")) or (
        plan.argv[:2] == (sys.executable, "-m") and str(binary) in plan.argv
    )
    with pytest.raises(HarnessError, match=f"roller harness install {adapter.name}"):
        adapter.launch_plan(_request(tmp_path, install_dir=None))
    for prompt in (None, "", " \n"):
        with pytest.raises(UsageError, match=f"{adapter.name} needs a prompt"):
            adapter.launch_plan(_request(tmp_path, prompt=prompt))
    with pytest.raises(UsageError, match=f"unknown {adapter.name} option"):
        adapter.launch_plan(_request(tmp_path, options={"no-such-option": "1"}))


def test_the_binary_directory_comes_first_and_path_never_ends_up_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work")
    binary = tmp_path / "bin" / "tool"
    monkeypatch.setenv("PATH", "/opt/x:/usr/bin")
    assert harness_env(dirs, binary)["PATH"] == f"{tmp_path / 'bin'}:/opt/x:/usr/bin"
    monkeypatch.setenv("PATH", "")
    assert harness_env(dirs, binary)["PATH"] == f"{tmp_path / 'bin'}:/usr/local/bin:/usr/bin:/bin"


def test_copy_tree_neither_follows_nor_keeps_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "log.jsonl").write_text("{}\n")
    (source / "link.jsonl").symlink_to(outside)
    (source / "dirlink").symlink_to(tmp_path)
    copy_tree(source, tmp_path / "dest")
    copied = sorted(
        p.relative_to(tmp_path / "dest").as_posix() for p in (tmp_path / "dest").rglob("*")
    )
    assert copied == ["sub", "sub/log.jsonl"]
    copy_tree(tmp_path / "missing", tmp_path / "dest2")
    assert not (tmp_path / "dest2").exists()


def test_a_failed_sqlite_snapshot_writes_nothing_at_its_destination(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    db.write_bytes(b"not a database" * 100)
    dest = tmp_path / "native" / "state.sqlite"
    with pytest.raises(sqlite3.DatabaseError):
        snapshot_sqlite(db, dest)
    assert list(dest.parent.iterdir()) == []

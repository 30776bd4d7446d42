"""Resuming a conversation (`ResumableAdapter`): the root id is the one the real native
logs confirm, and the next launch names exactly it.

Real fixtures of the pinned binaries (tests/data/harnesses/), read by the adapters' own
readers; a corrupted copy shows each way a root is not confirmed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.harnesses.claude_code import ClaudeCodeAdapter
from roller.harnesses.codex import CodexAdapter
from roller.harnesses.opencode import OpenCodeAdapter

from . import claude_code_fixtures as cc
from . import codex_data
from . import opencode_fixtures as oc


def _request(tmp_path: Path, prompt: str = "-- and now the tests") -> LaunchRequest:
    return LaunchRequest(
        prompt=prompt,
        command=(),
        dirs=ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work"),
        base_urls={"anthropic": "http://127.0.0.1:9", "openai": "http://127.0.0.1:9/v1"},
        credentials={"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o"},
        model=None,
        capture_calls=True,
        timeout_s=30.0,
        install_dir=tmp_path / "install",
    )


def test_claude_code_confirms_the_main_transcripts_session(tmp_path: Path) -> None:
    adapter = ClaudeCodeAdapter()
    native = cc.native_copy("single", tmp_path)  # a root and one subagent
    session = cc.main_transcript(native).stem
    assert adapter.confirmed_root(adapter.read_native(native)) == session

    plan = adapter.resume_plan(_request(tmp_path), session)
    first = adapter.launch_plan(_request(tmp_path))
    assert plan.argv == (*first.argv, "--resume", session)
    assert plan.stdin == b"-- and now the tests"  # the prompt is never an argument
    assert (plan.env, plan.cwd) == (first.env, first.cwd)

    # a second main transcript: two roots, and its lines name another session
    main = cc.main_transcript(native)
    shutil.copyfile(main, main.with_name("00000000-0000-4000-8000-000000000000.jsonl"))
    broken = adapter.read_native(native)
    assert broken is not None and broken.problems
    with pytest.raises(HarnessError, match="not confirmed") as caught:
        adapter.confirmed_root(broken)
    # the problems are named as the capture errors name them: `where: message`
    assert str(caught.value).endswith(": " + "; ".join(str(p) for p in broken.problems[:3]))


def test_opencode_confirms_the_one_session_without_a_parent(tmp_path: Path) -> None:
    adapter = OpenCodeAdapter()
    native = oc.native_copy("single", tmp_path)
    db = native / "opencode.db"
    ((root,),) = oc.sql(db, "SELECT id FROM session WHERE parent_id IS NULL")
    assert oc.sql(db, "SELECT count(*) FROM session WHERE parent_id IS NOT NULL") == [(1,)]
    assert adapter.confirmed_root(adapter.read_native(native)) == root

    plan = adapter.resume_plan(_request(tmp_path), root)
    argv = list(plan.argv)
    assert argv[argv.index("--session") + 1] == root and argv[1] == "run"
    assert "--continue" not in argv and plan.stdin == b"-- and now the tests"

    # the child made a root too: two conversations, neither is picked
    oc.sql(db, "UPDATE session SET parent_id = NULL")
    with pytest.raises(HarnessError, match="2 root conversations"):
        adapter.confirmed_root(adapter.read_native(native))


def test_codex_confirms_the_root_thread_never_a_child(tmp_path: Path) -> None:
    adapter = CodexAdapter()
    native = codex_data.copy("v1-single", tmp_path)
    root, children = codex_data.root_and_children(native)
    assert children and adapter.confirmed_root(adapter.read_native(native)) == root


@pytest.mark.parametrize("adapter", [ClaudeCodeAdapter(), OpenCodeAdapter(), CodexAdapter()])
def test_no_logs_confirm_no_root(adapter: ClaudeCodeAdapter, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="no native logs"):
        adapter.confirmed_root(None)
    empty = tmp_path / "native"
    empty.mkdir()
    with pytest.raises(HarnessError, match=f"{adapter.name}: "):
        adapter.confirmed_root(adapter.read_native(empty))


@pytest.mark.parametrize("adapter", [ClaudeCodeAdapter(), OpenCodeAdapter(), CodexAdapter()])
@pytest.mark.parametrize("root", ["--continue", "--last", "latest", "../x", ""])
def test_resume_takes_only_an_id_of_the_harness_shape(
    adapter: ClaudeCodeAdapter, root: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="is not a"):
        adapter.resume_plan(_request(tmp_path), root)

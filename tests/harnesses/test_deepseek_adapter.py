"""The DeepSeek Harness adapter's launch plan, and the driver's settle logic fed the side
channel notifications the real runtime sent (tests/e2e/test_deepseek.py runs it for real)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchRequest, NativeCapture
from roller.harnesses.deepseek import ROOT_SESSION, driver

from .fixture_capture import native_copy
from .launch_requests import launch_request

KEY = "sk-test-not-a-real-key"


def _request(tmp_path: Path, **options: str) -> LaunchRequest:
    return launch_request(
        tmp_path, "--looks like a flag", {"DEEPSEEK_API_KEY": KEY, "OPENAI_API_KEY": KEY}, **options
    )


def _arg(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_the_plan_runs_roller_s_driver_with_the_harness_python(tmp_path: Path) -> None:
    plan = adapter_for("deepseek").launch_plan(_request(tmp_path))
    assert plan.argv[0] == str(tmp_path / "install" / "venv" / "bin" / "python")
    here = tmp_path / "tmp" / "roller-deepseek"
    assert plan.argv[1] == str(here / "driver.py")
    files = {str(f.path): f.content for f in plan.files}
    assert files[str(here / "driver.py")] == Path(driver.__file__).read_text()
    assert _arg(plan.argv, "--profile") == "sdk-minimal"
    assert _arg(plan.argv, "--session-id") == ROOT_SESSION
    assert _arg(plan.argv, "--base-url") == "http://127.0.0.1:9"
    assert "--patch" not in plan.argv and "--resume" not in plan.argv
    assert plan.stdin == b"--looks like a flag"  # the prompt never rides on argv
    assert plan.env["DSH_TELEMETRY_MODE"] == "DISABLED"
    assert plan.env["DSH_PERMISSION_MODE"] == "danger-full-access"
    assert plan.env["DEEPSEEK_API_KEY"] == KEY
    assert plan.secret_env == frozenset({"DEEPSEEK_API_KEY"}) and "OPENAI_API_KEY" not in plan.env
    assert all(KEY not in text for text in files.values())


def test_the_sdk_profile_turns_zstd_off_and_may_raise_the_depth(tmp_path: Path) -> None:
    plan = adapter_for("deepseek").launch_plan(
        _request(tmp_path, profile="sdk", **{"max-depth": "2"})
    )
    here = tmp_path / "tmp" / "roller-deepseek"
    patches = [plan.argv[i + 1] for i, a in enumerate(plan.argv) if a == "--patch"]
    assert patches == [str(here / "no-zstd.yml"), str(here / "max-depth.yml")]
    files = {str(f.path): f.content for f in plan.files}
    assert "compression: none" in files[patches[0]]
    assert "root: !!js dshHomePath('sessions')" in files[patches[0]]
    assert "maxDepth: 2" in files[patches[1]]


def test_a_bad_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="profile must be one of"):
        adapter_for("deepseek").launch_plan(_request(tmp_path, profile="headless"))


def test_a_later_turn_resumes_the_root_the_logs_confirm(tmp_path: Path) -> None:
    adapter = adapter_for("deepseek")
    native = adapter.read_native(native_copy("deepseek", "sdk-single", tmp_path))
    assert isinstance(native, NativeCapture)
    root = adapter.confirmed_root(native)  # type: ignore[attr-defined]
    assert root == ROOT_SESSION
    plan = adapter.resume_plan(_request(tmp_path, profile="sdk"), root)  # type: ignore[attr-defined]
    assert _arg(plan.argv, "--resume") == root and "--session-id" not in plan.argv
    with pytest.raises(HarnessError):
        adapter.confirmed_root(None)  # type: ignore[attr-defined]


class Note:
    def __init__(self, method: str, payload: dict[str, Any]):
        self.method, self.payload = method, payload


def _status(session: str, status: str) -> Note:
    return Note("session.status", {"sessionId": session, "status": status})


def _event(session: str, seq: int, kind: str, data: dict[str, Any] | None = None) -> Note:
    event = {"type": kind, "seq": seq, "data": data or {}}
    return Note("session.event", {"sessionId": session, "event": event})


def _notice(session: str, seq: int, child: str) -> Note:
    source = {"kind": "subagent-settled", "senderSessionId": child}
    return _event(session, seq, "user/message", {"source": source, "content": []})


def _tree() -> tuple[driver.Tree, io.StringIO]:
    out = io.StringIO()
    return driver.Tree("root", out), out


# As the runtime sent them for one background child (spawn-one, profile sdk): the root's
# first idle comes while the child still runs; the notice turn ends the wait.
ONE_CHILD = [
    _status("root", "running"),
    Note("subagent.started", {"parentSessionId": "root", "childSessionId": "c"}),
    _status("c", "running"),
    _status("root", "idle"),
    _status("c", "idle"),
    _status("root", "running"),
    Note("subagent.finished", {"parentSessionId": "root", "childSessionId": "c", "status": "ok"}),
    _notice("root", 28, "c"),
    _status("root", "idle"),
]


def test_the_tree_settles_only_after_the_root_took_in_the_notice() -> None:
    tree, out = _tree()
    for i, note in enumerate(ONE_CHILD):
        tree.feed(note.method, note.payload)
        settled = not tree.pending() and tree.root_idle
        assert settled == (i == len(ONE_CHILD) - 1), i
    tree.settle(0.1)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["event"] for x in lines] == [
        "subagent.started",
        "subagent.finished",
        "notice.consumed",
        "settled",
    ]
    assert lines[-1] == {"event": "settled", "outcome": "settled", "pending": []}


def test_a_grandchild_need_not_be_taken_in_by_the_root() -> None:
    tree, _ = _tree()
    for note in [
        Note("subagent.started", {"parentSessionId": "root", "childSessionId": "c"}),
        Note("subagent.started", {"parentSessionId": "c", "childSessionId": "g"}),
        Note("subagent.finished", {"childSessionId": "g"}),
        Note("subagent.finished", {"childSessionId": "c"}),
        _notice("root", 30, "c"),
        _status("root", "idle"),
    ]:
        tree.feed(note.method, note.payload)
    assert tree.pending() == [] and tree.root_idle


def test_a_wait_that_runs_out_is_recorded_with_what_was_pending() -> None:
    tree, out = _tree()
    for note in ONE_CHILD[:4]:
        tree.feed(note.method, note.payload)
    tree.settle(0.05)
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last == {"event": "settled", "outcome": "timeout", "pending": ["c"]}


def test_settle_wakes_on_the_notification_that_completes_it() -> None:
    tree, out = _tree()
    for note in ONE_CHILD[:-1]:
        tree.feed(note.method, note.payload)
    last = ONE_CHILD[-1]
    timer = threading.Timer(0.05, tree.feed, (last.method, last.payload))
    timer.start()
    tree.settle(5.0)
    timer.join()
    assert json.loads(out.getvalue().splitlines()[-1])["outcome"] == "settled"

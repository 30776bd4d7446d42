"""Refusals happen before anything is written, with one clear line and no traceback."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.captures import roller


def test_unknown_mock_scenario_is_refused_before_the_run_dir_exists(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        "mock:nope",
        "--run-dir",
        str(run_dir),
        "--",
        "true",
    )
    assert proc.returncode == 2
    assert "no scenario 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    assert not run_dir.exists()


def test_capture_calls_needs_an_explicit_api_base(tmp_path: Path) -> None:
    proc = roller(
        "collect",
        "--harness",
        "opencode",
        "--capture-calls",
        "--prompt",
        "hi",
        "--run-dir",
        str(tmp_path / "run"),
    )
    assert proc.returncode == 2
    assert "--capture-calls requires an explicit --api-base" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_resume_refuses_to_mix_capture_modes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        "mock:plain",
        "--run-dir",
        str(run_dir),
        "--",
        "true",
    )
    assert first.returncode in (0, 1), first.stderr
    again = roller(
        "collect",
        "--harness",
        "generic",
        "--api-base",
        "mock:plain",
        "--capture-calls",
        "--run-dir",
        str(run_dir),
        "--",
        "true",
    )
    assert again.returncode == 2
    assert "resume cannot mix modes" in again.stderr


def test_session_inspection_never_creates_a_database(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "sessions.db"
    proc = roller("sessions", "list", "--db", str(db))
    assert proc.returncode == 2
    assert "no session database" in proc.stderr
    assert not db.parent.exists()


def test_the_original_claude_capture_calls_name_belongs_to_claude_code_only(
    tmp_path: Path,
) -> None:
    proc = roller(
        "collect", "--harness", "generic", "--claude-capture-calls", "--api-base", "mock:plain",
        "--run-dir", str(tmp_path / "run"), "--", "true",
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        "--claude-capture-calls is the original name of --capture-calls for --harness "
        "claude-code; with --harness generic use --capture-calls"
    ) in proc.stderr
    assert not (tmp_path / "run").exists()
    shown = " ".join(roller("collect", "--help").stdout.split())
    assert "--claude-capture-calls" in shown and "kept for --harness claude-code" in shown


def test_resume_takes_no_new_tasks(tmp_path: Path) -> None:
    proc = roller("collect", "--resume", str(tmp_path), "--prompt", "hi")
    assert proc.returncode == 2
    assert "it takes no --prompt" in proc.stderr
    missing = roller("collect", "--resume", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no run.json there" in missing.stderr


def test_executor_ray_without_ray_says_how_to_install_it(tmp_path: Path) -> None:
    # A `ray` that cannot be imported, ahead of the installed one on the path.
    shadow = tmp_path / "no-ray" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n"
    )
    run_dir = tmp_path / "run"
    proc = roller(
        "collect", "--harness", "generic", "--api-base", "mock:plain", "--run-dir",
        str(run_dir), "--executor", "ray", "--", "true",
        env={**os.environ, "PYTHONPATH": str(shadow.parent)},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'roller[ray]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not run_dir.exists()

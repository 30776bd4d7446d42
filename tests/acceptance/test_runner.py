"""The runner's credential hygiene: no key of the caller's reaches a mock run."""

from __future__ import annotations

from pathlib import Path

import pytest

from roller.acceptance.profiles import profile_for
from roller.acceptance.runner import Outcome, Plan, collect_env, failed, modes_of, summary_line
from roller.errors import UsageError


def test_mock_runs_get_fresh_test_keys_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-anthropic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-real-deepseek")
    monkeypatch.setenv("SOME_AUTH_TOKEN", "tok-real")
    env, secrets = collect_env(Plan("claude-code", tmp_path), profile_for("claude-code"))
    assert not {"OPENAI_API_KEY", "DEEPSEEK_API_KEY", "SOME_AUTH_TOKEN"} & set(env)
    assert env["ANTHROPIC_API_KEY"].startswith("sk-roller-acceptance-")
    assert secrets == (env["ANTHROPIC_API_KEY"],)
    again, _ = collect_env(Plan("claude-code", tmp_path), profile_for("claude-code"))
    assert again["ANTHROPIC_API_KEY"] != env["ANTHROPIC_API_KEY"]
    assert "sk-real" not in " ".join(env.values())


def test_real_provider_runs_pass_only_the_named_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-anthropic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai")
    plan = Plan(
        "claude-code", tmp_path, api_base="https://x", credential_env=("ANTHROPIC_API_KEY",)
    )
    env, secrets = collect_env(plan, profile_for("claude-code"))
    assert env["ANTHROPIC_API_KEY"] == "sk-real-anthropic" and "OPENAI_API_KEY" not in env
    assert secrets == ("sk-real-anthropic",)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        collect_env(plan, profile_for("claude-code"))


def test_summary_lines() -> None:
    ok = Outcome("single", "PASS", (), None, 1.25)
    bad = Outcome("nested", "FAIL", ("a", "b"), None, 2.0)
    na = Outcome("background", "NOT_APPLICABLE", ("no background parameter",), None, 0.0)
    assert summary_line(ok) == "PASS           single (1.2s)"
    assert summary_line(bad) == "FAIL           nested: a; b"
    assert summary_line(na) == "NOT_APPLICABLE background: no background parameter"
    assert failed([ok, na]) is False and failed([ok, bad]) is True


def test_a_harness_run_several_ways_reports_each_mode(tmp_path: Path) -> None:
    every = modes_of(Plan(harness="codex", work_dir=tmp_path))
    assert [m.mode for m in every] == ["function-tools", "code-mode"]
    only = modes_of(Plan(harness="codex", work_dir=tmp_path, modes=("code-mode",)))
    assert [m.mode for m in only] == ["code-mode"]
    assert [m.mode for m in modes_of(Plan(harness="pi", work_dir=tmp_path))] == [None]
    with pytest.raises(UsageError, match=r"no acceptance mode .chat.*function-tools, code-mode"):
        modes_of(Plan(harness="codex", work_dir=tmp_path, modes=("chat",)))
    coded = Outcome("single", "PASS", (), None, 1.0, mode="code-mode")
    assert coded.label == "code-mode/single"
    assert summary_line(coded) == "PASS           code-mode/single (1.0s)"


def test_a_launch_option_picks_the_profile_before_its_modes(tmp_path: Path) -> None:
    deepseek = profile_for("deepseek")
    sdk = deepseek.variants["profile=sdk"]
    plan = Plan(harness="deepseek", work_dir=tmp_path, options={"profile": "sdk"})
    assert modes_of(plan) == (sdk,) and sdk is not deepseek
    assert modes_of(Plan(harness="deepseek", work_dir=tmp_path)) == (deepseek,)

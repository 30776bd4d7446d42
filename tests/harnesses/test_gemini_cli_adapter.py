"""The Gemini CLI launch plan (data) and the native log copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchPlan, LaunchRequest, ScratchDirs
from roller.harnesses.gemini_cli import GeminiCliAdapter

from .fixture_capture import fixture_dir

KEY = "sk-test-gemini-key-value"


def _request(tmp_path: Path, **changes: object) -> LaunchRequest:
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    values: dict[str, object] = {
        "prompt": "Do the task.",
        "command": (),
        "dirs": dirs,
        "base_urls": {
            "anthropic": "http://127.0.0.1:9",
            "openai": "http://127.0.0.1:9/v1",
            "gemini": "http://127.0.0.1:9",
        },
        "credentials": {"GEMINI_API_KEY": KEY, "ANTHROPIC_API_KEY": "other", "OPENAI_API_KEY": "x"},
        "model": None,
        "capture_calls": True,
        "timeout_s": 60.0,
        "install_dir": tmp_path / "install",
    }
    values.update(changes)
    return LaunchRequest(**values)  # type: ignore[arg-type]


def _settings(plan: LaunchPlan) -> dict[str, object]:
    (settings,) = [f for f in plan.files if f.path.name == "settings.json"]
    value = json.loads(settings.content)
    assert isinstance(value, dict)
    return value


def test_registered() -> None:
    adapter = adapter_for("gemini-cli")
    assert isinstance(adapter, GeminiCliAdapter)
    assert (adapter.pin.package, adapter.pin.version) == ("@google/gemini-cli", "0.61.0")


def test_headless_plan(tmp_path: Path) -> None:
    plan = GeminiCliAdapter().launch_plan(_request(tmp_path))
    binary = tmp_path / "install" / "node_modules" / ".bin" / "gemini"
    assert plan.argv == (
        str(binary),
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--prompt=Do the task.",
    )
    assert plan.cwd == tmp_path / "work"
    assert plan.env["HOME"] == str(tmp_path / "home")
    assert plan.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert plan.env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    assert plan.env["PATH"].split(":")[0] == str(binary.parent)
    # only the Gemini key is handed over, and it is marked secret
    assert plan.env["GEMINI_API_KEY"] == KEY and plan.secret_env == {"GEMINI_API_KEY"}
    assert "ANTHROPIC_API_KEY" not in plan.env and "OPENAI_API_KEY" not in plan.env
    assert all(KEY not in f.content for f in plan.files)
    assert plan.stdin is None


def test_settings_keep_telemetry_in_a_local_file_and_usage_statistics_off(tmp_path: Path) -> None:
    settings = _settings(GeminiCliAdapter().launch_plan(_request(tmp_path)))
    assert settings["telemetry"] == {
        "enabled": True,
        "target": "local",
        "outfile": str(tmp_path / "home" / ".gemini" / "telemetry.log"),
        "logPrompts": True,
    }
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["security"] == {
        "auth": {"selectedType": "gemini-api-key"},
        "folderTrust": {"enabled": False},
    }
    assert "experimental" not in settings and "tools" not in settings


def test_without_capture_calls_the_delegation_tool_is_removed(tmp_path: Path) -> None:
    settings = _settings(GeminiCliAdapter().launch_plan(_request(tmp_path, capture_calls=False)))
    assert settings["experimental"] == {"enableAgents": False}
    assert settings["tools"] == {"exclude": ["invoke_agent"]}


def test_model_options_and_a_prompt_that_looks_like_a_flag(tmp_path: Path) -> None:
    request = _request(
        tmp_path,
        prompt="--yolo is not a flag here",
        model="gemini-2.5-flash",
        options={"approval-mode": ""},
    )
    plan = GeminiCliAdapter().launch_plan(request)
    assert plan.argv[1:] == (
        "--output-format",
        "stream-json",
        "--model",
        "gemini-2.5-flash",
        "--prompt=--yolo is not a flag here",
    )


def test_agents_option_writes_local_agent_definitions(tmp_path: Path) -> None:
    spec = {
        "roller-restricted": {
            "description": "A restricted helper.",
            "prompt": "Do exactly what you are asked.",
            "tools": ["read_file"],
            "model": "gemini-2.5-flash",
        }
    }
    plan = GeminiCliAdapter().launch_plan(_request(tmp_path, options={"agents": json.dumps(spec)}))
    (agent,) = [f for f in plan.files if f.path.suffix == ".md"]
    assert agent.path == tmp_path / "home" / ".gemini" / "agents" / "roller-restricted.md"
    head, body = agent.content.removeprefix("---\n").split("\n---\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    assert {k: json.loads(v) if k != "kind" else v for k, v in fields.items()} == {
        "name": "roller-restricted",
        "kind": "local",
        "description": "A restricted helper.",
        "tools": ["read_file"],
        "model": "gemini-2.5-flash",
    }
    assert body == "Do exactly what you are asked.\n"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bogus": "1"}, "unknown gemini-cli option"),
        ({"agents": "{"}, "not JSON"),
        ({"agents": '{"x": {"prompt": "p"}}'}, "needs a name and a description"),
        ({"agents": '{"x": {"description": "d", "color": "red"}}'}, "unknown key"),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        GeminiCliAdapter().launch_plan(_request(tmp_path, options=options))


def test_not_installed_and_no_prompt(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="roller harness install gemini-cli"):
        GeminiCliAdapter().launch_plan(_request(tmp_path, install_dir=None))
    with pytest.raises(UsageError, match="needs a prompt"):
        GeminiCliAdapter().launch_plan(_request(tmp_path, prompt=None))


def test_collect_native_copies_chats_and_telemetry(tmp_path: Path) -> None:
    source = fixture_dir("gemini-cli", "single") / "native"
    home = tmp_path / "home"
    shutil.copytree(source / "tmp", home / ".gemini" / "tmp")
    shutil.copyfile(source / "telemetry.log", home / ".gemini" / "telemetry.log")
    (home / ".gemini" / "settings.json").write_text("{}")
    (home / ".gemini" / "tmp" / "work" / ".project_root").write_text("/somewhere")
    dest = tmp_path / "native"
    dirs = ScratchDirs(home=home, tmp=tmp_path / "tmp", work=tmp_path / "work")
    GeminiCliAdapter().collect_native(dirs, dest)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    expected = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    assert copied == expected  # chats and telemetry only: no settings, no project markers
    capture = GeminiCliAdapter().read_native(dest)
    assert capture is not None and capture.problems == ()


def test_collect_native_on_an_empty_home_copies_nothing(tmp_path: Path) -> None:
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    GeminiCliAdapter().collect_native(dirs, tmp_path / "native")
    assert not (tmp_path / "native").exists()

"""The Pi launch plan (data) for each API, and the native log copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roller.errors import HarnessError, UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchPlan, LaunchRequest, ScratchDirs
from roller.harnesses.pi import PiAdapter

from .fixture_capture import fixture_dir

OPENAI_KEY = "sk-test-openai-value"
ANTHROPIC_KEY = "sk-test-anthropic-value"


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
        "credentials": {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        "model": None,
        "capture_calls": True,
        "timeout_s": 60.0,
        "install_dir": tmp_path / "install",
    }
    values.update(changes)
    return LaunchRequest(**values)  # type: ignore[arg-type]


def _file(plan: LaunchPlan, name: str) -> dict[str, object]:
    (found,) = [f for f in plan.files if f.path.name == name]
    assert found.path.parent == plan.cwd.parent / "home" / ".pi" / "agent"
    value = json.loads(found.content)
    assert isinstance(value, dict)
    return value


def test_registered() -> None:
    adapter = adapter_for("pi")
    assert isinstance(adapter, PiAdapter)
    assert (adapter.pin.package, adapter.pin.version) == ("@mariozechner/pi-coding-agent", "0.73.1")
    assert adapter.subtasks == "not_available_in_bundled_profile"


def test_print_plan_without_extensions_prompt_on_stdin(tmp_path: Path) -> None:
    plan = PiAdapter().launch_plan(_request(tmp_path, prompt="-p looks like a flag"))
    binary = tmp_path / "install" / "node_modules" / ".bin" / "pi"
    assert plan.argv == (
        str(binary),
        "--offline",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--provider",
        "roller",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "-p",
    )
    assert plan.stdin == b"-p looks like a flag"
    assert plan.cwd == tmp_path / "work"
    assert plan.env["PI_OFFLINE"] == "1" and plan.env["HOME"] == str(tmp_path / "home")
    assert _file(plan, "settings.json") == {
        "enableInstallTelemetry": False,
        "defaultProvider": "roller",
        "defaultModel": "mock-model",
    }


@pytest.mark.parametrize(
    ("api", "base_url", "key_env", "key"),
    [
        ("openai-responses", "http://127.0.0.1:9/v1", "OPENAI_API_KEY", OPENAI_KEY),
        ("openai-completions", "http://127.0.0.1:9/v1", "OPENAI_API_KEY", OPENAI_KEY),
        ("anthropic-messages", "http://127.0.0.1:9", "ANTHROPIC_API_KEY", ANTHROPIC_KEY),
    ],
)
def test_one_provider_per_api_key_named_never_written(
    tmp_path: Path, api: str, base_url: str, key_env: str, key: str
) -> None:
    plan = PiAdapter().launch_plan(_request(tmp_path, options={"api": api}, model="m-1"))
    provider = _file(plan, "models.json")["providers"]["roller"]  # type: ignore[index]
    assert provider == {
        "baseUrl": base_url,
        "api": api,
        "apiKey": key_env,
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "m-1", "contextWindow": 128000, "maxTokens": 4096}],
    }
    assert plan.env[key_env] == key and plan.secret_env == {key_env}
    other = ({"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} - {key_env}).pop()
    assert other not in plan.env
    assert all(OPENAI_KEY not in f.content and ANTHROPIC_KEY not in f.content for f in plan.files)
    assert plan.argv[plan.argv.index("--model") + 1] == "m-1"


def test_default_api_is_responses(tmp_path: Path) -> None:
    plan = PiAdapter().launch_plan(_request(tmp_path))
    assert _file(plan, "models.json")["providers"]["roller"]["api"] == "openai-responses"  # type: ignore[index]


def test_tools_option(tmp_path: Path) -> None:
    plan = PiAdapter().launch_plan(_request(tmp_path, options={"tools": "read,bash"}))
    assert plan.argv[plan.argv.index("--tools") + 1] == "read,bash"


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"options": {"api": "google-generative-ai"}}, UsageError, "api must be one of"),
        ({"options": {"bogus": "1"}}, UsageError, "unknown pi option"),
        ({"prompt": None}, UsageError, "needs a prompt"),
        ({"install_dir": None}, HarnessError, "roller harness install pi"),
    ],
)
def test_bad_requests(
    tmp_path: Path, changes: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PiAdapter().launch_plan(_request(tmp_path, **changes))


def test_collect_native_copies_the_sessions(tmp_path: Path) -> None:
    source = fixture_dir("pi", "responses-tool-error") / "native"
    home = tmp_path / "home"
    shutil.copytree(source / "sessions", home / ".pi" / "agent" / "sessions")
    (home / ".pi" / "agent" / "auth.json").write_text("{}")
    dest = tmp_path / "native"
    dirs = ScratchDirs(home=home, tmp=tmp_path / "tmp", work=tmp_path / "work")
    PiAdapter().collect_native(dirs, dest)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert copied == sorted(
        p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()
    )
    capture = PiAdapter().read_native(dest)
    assert capture is not None and capture.problems == ()

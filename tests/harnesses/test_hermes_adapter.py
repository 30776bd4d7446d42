"""The Hermes adapter's launch plan, and roller's plugin run against a stand-in for the
plugin context Hermes gives it (the real one runs in tests/e2e/test_hermes.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from roller.errors import UsageError
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchRequest
from roller.harnesses.hermes import plugin
from roller.harnesses.hermes.profile import SESSION_HEADER, WIRE
from roller.harnesses.registry import identify

from .launch_requests import launch_request

KEY = "sk-test-not-a-real-key"


def _request(tmp_path: Path, **options: str) -> LaunchRequest:
    return launch_request(
        tmp_path,
        "-starts with a dash",
        {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY},
        **options,
    )


def _files(plan: Any) -> dict[str, str]:
    return {str(f.path): f.content for f in plan.files}


@pytest.mark.parametrize(
    ("mode", "base", "key"),
    [
        ("chat_completions", "http://127.0.0.1:9/v1", "OPENAI_API_KEY"),
        ("codex_responses", "http://127.0.0.1:9/v1", "OPENAI_API_KEY"),
        ("anthropic_messages", "http://127.0.0.1:9", "ANTHROPIC_API_KEY"),
    ],
)
def test_the_plan_configures_one_provider_per_mode_and_names_the_key(
    tmp_path: Path, mode: str, base: str, key: str
) -> None:
    plan = adapter_for("hermes").launch_plan(_request(tmp_path, **{"api-mode": mode}))
    assert plan.argv[1:] == ("--oneshot=-starts with a dash",)
    files = _files(plan)
    config = json.loads(files[str(tmp_path / "home" / ".hermes" / "config.yaml")])
    provider = config["providers"]["roller"]
    assert provider == {
        "base_url": base,
        "key_env": key,
        "default_model": "mock-model",
        "api_mode": mode,
    }
    assert config["model"]["context_length"] == 131072
    assert config["security"] == {"allow_lazy_installs": False}
    assert config["plugins"] == {"enabled": [plugin.PLUGIN_NAME]}
    assert plan.env[key] == KEY and plan.secret_env == frozenset({key})
    assert plan.env["HERMES_DISABLE_LAZY_INSTALLS"] == "1"
    assert all(KEY not in text for text in files.values()), "no credential in a file"


def test_the_plugin_is_written_as_hermes_loads_it(tmp_path: Path) -> None:
    plan = adapter_for("hermes").launch_plan(_request(tmp_path))
    where = tmp_path / "home" / ".hermes" / "plugins" / plugin.PLUGIN_NAME
    files = _files(plan)
    assert files[str(where / "__init__.py")] == Path(plugin.__file__).read_text()
    assert f"name: {plugin.PLUGIN_NAME}" in files[str(where / "plugin.yaml")]


def test_delegation_options_reach_the_config(tmp_path: Path) -> None:
    plan = adapter_for("hermes").launch_plan(
        _request(tmp_path, **{"max-spawn-depth": "2", "child-model": "mock-small"})
    )
    config = json.loads(_files(plan)[str(tmp_path / "home" / ".hermes" / "config.yaml")])
    assert config["delegation"] == {"max_spawn_depth": 2, "model": "mock-small"}


def test_a_bad_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="api-mode must be one of"):
        adapter_for("hermes").launch_plan(_request(tmp_path, **{"api-mode": "gemini"}))


class FakeContext:
    """What `register(ctx)` uses of Hermes's PluginContext."""

    def __init__(self) -> None:
        self.middleware: dict[str, Any] = {}
        self.hooks: dict[str, Any] = {}

    def register_middleware(self, kind: str, callback: Any) -> None:
        self.middleware[kind] = callback

    def register_hook(self, name: str, callback: Any) -> None:
        self.hooks[name] = callback


def test_the_plugin_adds_one_header_and_changes_nothing_else() -> None:
    ctx = FakeContext()
    plugin.register(ctx)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    out = ctx.middleware["llm_request"](request=request, session_id="20261201_000000_abcdef")
    assert out["request"] == {
        **request,
        "extra_headers": {SESSION_HEADER: "20261201_000000_abcdef"},
    }
    kept = {"anthropic-beta": "x"}
    out = ctx.middleware["llm_request"](request={**request, "extra_headers": kept}, session_id="s")
    assert out["request"]["extra_headers"] == {"anthropic-beta": "x", SESSION_HEADER: "s"}
    assert ctx.middleware["llm_request"](request=request, session_id="") is None
    assert plugin.HEADER == SESSION_HEADER


def test_the_plugin_header_is_the_hermes_identity_and_no_one_elses() -> None:
    mine = identify("hermes", [], None, {SESSION_HEADER: "20261201_000000_abcdef"})
    assert mine.rule == "hermes-plugin-header"
    assert mine.participant_key == mine.session_key == "20261201_000000_abcdef"
    assert mine.is_child is None
    other = identify("opencode", [], None, {SESSION_HEADER: "20261201_000000_abcdef"})
    assert other.participant_key is None
    assert (SESSION_HEADER, "header of hermes, not trusted for declared harness opencode") in [
        tuple(r) for r in other.rejected
    ]
    assert WIRE.headers() == (SESSION_HEADER,)


def test_children_are_recorded_under_the_delegate_call_that_built_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    ctx = FakeContext()
    plugin.register(ctx)
    scope, start = ctx.middleware["tool_execution"], ctx.hooks["subagent_start"]

    def delegate(call_id: str, children: list[str]) -> None:
        def run() -> str:
            for child in children:
                start(parent_session_id="root", child_session_id=child)
            return "ok"

        scope(tool_name="delegate_task", tool_call_id=call_id, session_id="root", next_call=run)

    threads = [
        threading.Thread(target=delegate, args=("call_a", ["c1", "c2"])),
        threading.Thread(target=delegate, args=("call_b", ["c3"])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    start(parent_session_id="root", child_session_id="outside")  # no delegate call running
    assert scope(tool_name="terminal", next_call=lambda: "ran") == "ran"
    lines = [json.loads(x) for x in (tmp_path / plugin.RECORD).read_text().splitlines()]
    got = {(x["child_session_id"], x["tool_call_id"], x["ordinal"]) for x in lines}
    assert got == {
        ("c1", "call_a", 0),
        ("c2", "call_a", 1),
        ("c3", "call_b", 0),
        ("outside", None, None),
    }

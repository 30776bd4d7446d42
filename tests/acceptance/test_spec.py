"""Scenario table, per-harness profiles and the mock-marker oracle."""

from __future__ import annotations

import pytest

from roller.acceptance.oracle import ROOT, Label, first_user_text, label_of
from roller.acceptance.profiles import profile_for
from roller.acceptance.scenarios import SCENARIO_NAMES, SCENARIOS, mock_source, scenario
from roller.errors import UsageError
from roller.harnesses.acceptance import AcceptanceProfile, Expect, Scenario, ScenarioOverride
from roller.mock.scenario_files import load_scenario

ISSUE_SCENARIOS = (
    "single", "parallel", "identical-prompts", "file-sharing", "tool-error",
    "tool-config", "plain", "nested", "background", "foreground",
    "fork",  # issue 5 (Codex v2-fork): a child started from a copy of its parent's history
)  # fmt: skip


def test_the_table_has_exactly_the_issue_scenarios_and_their_mocks_load() -> None:
    assert set(SCENARIO_NAMES) == set(ISSUE_SCENARIOS)
    for sc in SCENARIOS:
        load_scenario(mock_source(sc.mock))
        assert "ROLLER-SUBTASK" not in sc.prompt  # would make the root look like a child


def test_not_applicable_is_a_reason_not_a_scenario() -> None:
    profile = AcceptanceProfile(
        harness="x", credential_env=(), not_applicable={"nested": "depth 1"}
    )
    assert profile.resolve(scenario("nested")) == "depth 1"
    assert isinstance(profile.resolve(scenario("single")), Scenario)


def test_an_override_changes_only_what_it_names() -> None:
    base = Scenario("s", "plain", "p", Expect(children=1, max_depth=1), options={"a": "1"})
    profile = AcceptanceProfile(
        harness="x",
        credential_env=(),
        options={"all": "y"},
        overrides={"s": ScenarioOverride(options={"b": "2"}, expect={"children": 2})},
    )
    resolved = profile.resolve(base)
    assert isinstance(resolved, Scenario)
    assert resolved.options == {"all": "y", "a": "1", "b": "2"}
    assert resolved.expect == Expect(children=2, max_depth=1)
    assert resolved.mock == "plain" and resolved.prompt == "p"


def test_claude_code_runs_every_scenario_background_by_default() -> None:
    profile = profile_for("claude-code")
    resolved = {name: profile.resolve(scenario(name)) for name in SCENARIO_NAMES}
    assert {n for n, r in resolved.items() if not isinstance(r, Scenario)} == {"fork"}
    single = resolved["single"]
    assert isinstance(single, Scenario)
    assert single.expect.relations["launch_acknowledged"] == 1
    parallel = resolved["parallel"]
    assert isinstance(parallel, Scenario) and parallel.expect.relations["spawn"] == 2
    foreground = resolved["foreground"]
    assert isinstance(foreground, Scenario)
    assert "launch_acknowledged" in foreground.expect.forbidden_relations
    tool_config = resolved["tool-config"]
    assert isinstance(tool_config, Scenario)
    assert "roller-restricted" in tool_config.options["agents"]
    assert tool_config.expect.child_tools == frozenset({"Read"})


def test_unknown_names_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        scenario("nope")
    with pytest.raises(UsageError):
        profile_for("nope")


def test_codex_profile_every_delegation_is_acknowledged_and_fork_is_v2() -> None:
    profile = profile_for("codex")
    assert profile.mock_model == "mock-model" and profile.credential_env == ("OPENAI_API_KEY",)
    resolved = {name: profile.resolve(scenario(name)) for name in SCENARIO_NAMES}
    assert {n for n, r in resolved.items() if not isinstance(r, Scenario)} == {"foreground"}
    fork, nested, single = resolved["fork"], resolved["nested"], resolved["single"]
    assert isinstance(fork, Scenario) and fork.options == {"multi-agent": "v2"}
    assert fork.expect.child_forked_from_root and fork.expect.relations["launch_acknowledged"]
    assert isinstance(nested, Scenario) and nested.options == {"max-depth": "2"}
    assert nested.expect.max_depth == 2 and nested.expect.relations["spawn"] == 2
    assert isinstance(single, Scenario) and single.expect.relations["launch_ack_in_context"] == 1
    tool_config = resolved["tool-config"]
    assert isinstance(tool_config, Scenario) and tool_config.mock == "codex-tool-config.toml"
    load_scenario(mock_source(tool_config.mock))


def test_codex_code_mode_asks_for_no_model_so_the_catalog_default_runs() -> None:
    (code,) = profile_for("codex").other_modes
    assert (code.mode, code.mock_model) == ("code-mode", None)
    resolved = {name: code.resolve(scenario(name)) for name in SCENARIO_NAMES}
    assert {n for n, r in resolved.items() if not isinstance(r, Scenario)} == {"foreground"}
    nested, tool_config = resolved["nested"], resolved["tool-config"]
    # v2 nests in code mode: no depth option; the child's own tools need a fresh child
    assert isinstance(nested, Scenario) and nested.options == {} and nested.expect.max_depth == 2
    assert isinstance(tool_config, Scenario) and tool_config.expect.child_tools_differ
    loaded = load_scenario(mock_source(tool_config.mock))
    (spawn,) = next(r for r in loaded.rules if r.name.startswith("root: spawn")).calls
    assert spawn.params["fork"] is False and spawn.arguments == {"model": "gpt-6-luna"}


@pytest.mark.parametrize(
    ("context", "label"),
    [
        # Claude Code child: a system-reminder block, then the spawn prompt.
        (
            {"messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                {"type": "text", "text": "ROLLER-SUBTASK depth=1 id=a: reply"},
            ]}]},
            Label(1, "a"),
        ),
        # Its parent: the marker is only in an assistant tool call, not in user text.
        (
            {"messages": [
                {"role": "user", "content": "Do the task."},
                {"role": "assistant", "content": [{"type": "tool_use", "input": {
                    "prompt": "ROLLER-SUBTASK depth=1 id=a: reply"}}]},
            ]},
            ROOT,
        ),
        # Chat Completions with a system message first; a grandchild.
        (
            {"messages": [{"role": "system", "content": "s"},
                          {"role": "user", "content": "ROLLER-SUBTASK depth=2 id=a.a: hi"}]},
            Label(2, "a.a"),
        ),
        # Responses input items and a plain string input.
        ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}, ROOT),
        ({"input": "ROLLER-SUBTASK depth=1 id=b: x"}, Label(1, "b")),
        # Gemini contents/parts.
        ({"contents": [{"role": "user", "parts": [{"text": "ROLLER-SUBTASK depth=1 id=c: x"}]}]},
         Label(1, "c")),
        ({"messages": []}, None),
        (None, None),
        # Codex: the first user message is its <environment_context>; the task follows.
        ({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "<env_context>"}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "ROLLER-SUBTASK depth=1 id=a"}]},
        ]}, Label(1, "a")),
        # Codex v2 warm fork: the parent's history (a spawn call with the marker in its
        # arguments is not user text), then the task as an agent_message whose task part
        # is encrypted_content (plaintext off OpenAI).
        ({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Do the task."}]},
            {"type": "function_call", "arguments": '{"message": "ROLLER-SUBTASK depth=1 id=z"}'},
            {"type": "agent_message", "author": "/root", "content": [
                {"type": "input_text", "text": "Message Type: NEW_TASK"},
                {"type": "encrypted_content", "encrypted_content": "ROLLER-SUBTASK depth=1 id=f"},
            ]},
        ]}, Label(1, "f")),
        # A grandchild whose context also carries its parent's marker: the deepest wins.
        ({"messages": [{"role": "user", "content": "ROLLER-SUBTASK depth=1 id=a: spawn"},
                       {"role": "user", "content": "ROLLER-SUBTASK depth=2 id=a.a: hi"}]},
         Label(2, "a.a")),
    ],
)  # fmt: skip
def test_oracle_labels(context: object, label: Label | None) -> None:
    assert label_of(context) == label


def test_labels_know_their_parent() -> None:
    assert Label(2, "a.b").parent == Label(1, "a")
    assert Label(1, "a").parent == ROOT
    assert ROOT.parent is None and str(ROOT) == "root"
    assert first_user_text({"messages": [{"role": "user", "content": "x"}]}) == "x"

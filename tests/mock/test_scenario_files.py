from __future__ import annotations

from pathlib import Path

import pytest

from roller.errors import ConfigError
from roller.mock import builtin_scenarios, load_scenario, parse_scenario

REQUIRED_BUILTINS = {
    "plain",
    "spawn-one",
    "spawn-two-parallel",
    "spawn-identical-prompts",
    "spawn-nested",
    "tool-error",
    "spawn-then-wait",
    "spawn-background",
    "spawn-foreground",
    "spawn-file-sharing",
    "spawn-fork",
}


def test_builtins_are_all_there_and_described() -> None:
    found = builtin_scenarios()
    assert set(found) >= REQUIRED_BUILTINS
    assert all(description for description in found.values())


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_each_builtin_loads(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.rules
    # Every scenario ends: its last rule is an unconditional text reply.
    last = scenario.rules[-1]
    assert last.text and not last.calls


def test_a_file_path_loads_and_names_the_scenario_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('delay_ms = 5\nmodels = ["m1", "m2"]\n[[rules]]\ntext = "hi"\n')
    scenario = load_scenario(str(path))
    assert (scenario.name, scenario.delay_ms, scenario.models) == ("mine", 5, ("m1", "m2"))
    assert scenario.rules[0].name == "rule-1"


def test_unknown_name_lists_the_builtins() -> None:
    with pytest.raises(ConfigError, match=r"no scenario 'nope'.*spawn-one"):
        load_scenario("nope")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scenario file"):
        load_scenario(str(tmp_path / "absent.toml"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules = [", r"s\.toml: not valid TOML"),
        ("colour = 1", r"unknown key\(s\) in top level: colour"),
        ("delay_ms = -1", "delay_ms"),
        (
            '[[rules]]\nname = "a"\ntext = "x"\nlast_user_txt = "y"',
            r"rule 1 \(a\): unknown key\(s\) in rule: last_user_txt",
        ),
        ('[[rules]]\nname = "a"', r"rule 1 \(a\): a rule needs a reply"),
        (
            '[[rules]]\ntext = "x"\nkind = "chat"',
            r"rule 1 \(rule-1\): `kind` must be one of agent, title, json",
        ),
        ('[[rules]]\ntext = "x"\nprotocol = "grpc"', "unknown protocol 'grpc'"),
        ('[[rules]]\ntext = "x"\nturn = "1..2"', "`turn` must be an integer or a table"),
        ('[[rules]]\ntext = "x"\nchildren_pending = 1', "`children_pending` must be true or false"),
        ('[[rules]]\ntext = "x"\nturn = { min = 1, most = 2 }', "`turn` must be"),
        ('[[rules]]\ntext = "x"\nlast_message_role = "bot"', "last_message_role"),
        (
            '[[rules]]\ntext = "x"\nsystem_contains = 3',
            "`system_contains` must be a string or an array",
        ),
        ('[[rules]]\njson = { a = 1 }\ntext = "x"', "`json` cannot be combined"),
        ('[[rules]]\ntool_calls = [{ role = "dance" }]', r"tool call 1: unknown role 'dance'"),
        ('[[rules]]\ntool_calls = [{ role = "spawn" }]', "role spawn needs `prompt`"),
        ('[[rules]]\ntool_calls = [{ role = "spawn", prompt = 1 }]', "`prompt` must be str"),
        (
            '[[rules]]\ntool_calls = [{ role = "spawn", prompt = "p", background = "yes" }]',
            "`background` must be bool",
        ),
        (
            '[[rules]]\ntool_calls = [{ role = "wait", timeout_ms = true }]',
            "`timeout_ms` must be int",
        ),
        (
            '[[rules]]\ntool_calls = [{ role = "shell", command = "ls", prompt = "x" }]',
            r"unknown key\(s\) in tool call 1 \(role shell\): prompt",
        ),
        (
            '[[rules]]\ntool_calls = [{ role = "shell", tool = "Bash", command = "ls" }]',
            "exactly one of `role` or `tool`",
        ),
        (
            '[[rules]]\ntool_calls = [{ tool = "Bash", command = "ls" }]',
            r"unknown key\(s\) in tool call 1: command",
        ),
        (
            '[[rules]]\ntool_calls = [{ tool = "Bash", arguments = 3 }]',
            "`arguments` must be a table",
        ),
        ("rules = 3", "`rules` must be an array of tables"),
    ],
)
def test_problems_name_the_file_rule_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_scenario(text, "s.toml")
    assert str(caught.value).startswith("s.toml")


def test_a_rule_delay_must_be_a_non_negative_integer() -> None:
    ok = parse_scenario('[[rules]]\nname = "r"\ndelay_ms = 5\ntext = "x"\n', "inline")
    assert ok.rules[0].delay_ms == 5
    for bad in ("-1", "true", '"5"'):
        with pytest.raises(ConfigError, match="delay_ms"):
            parse_scenario(f'[[rules]]\nname = "r"\ndelay_ms = {bad}\ntext = "x"\n', "inline")

"""Launch option descriptors, resolved once for every harness (`roller.harnesses.options`)."""

from __future__ import annotations

import pytest

from roller.errors import UsageError
from roller.harnesses import adapters
from roller.harnesses.options import CliFlag, ConfigKey, EnvVar, LaunchOption, resolve_options

DECLARED = (
    LaunchOption("mode", CliFlag("--mode"), "a mode", choices=("a", "b"), default="a"),
    LaunchOption("tools", CliFlag("--tools"), "a list", default="x,y", empty_drops=True),
    LaunchOption("depth", ConfigKey("depth"), "a depth", integer=(1, 3)),
    LaunchOption("colour", EnvVar("COLOUR"), "a colour", env_when={"red": {"ALARM": "1"}}),
)


def test_defaults_apply_and_flags_come_in_declaration_order() -> None:
    resolved = resolve_options("h", DECLARED, {})
    assert resolved.values == {"mode": "a", "tools": "x,y"}
    assert resolved.argv() == ("--mode", "a", "--tools", "x,y")
    assert resolved.env() == {}
    given = resolve_options("h", DECLARED, {"tools": "z", "mode": "b", "depth": "2"})
    assert given.argv() == ("--mode", "b", "--tools", "z")
    assert given["depth"] == "2" and "colour" not in given and given.get("colour") is None


def test_an_empty_value_drops_a_droppable_option_and_its_default() -> None:
    resolved = resolve_options("h", DECLARED, {"tools": ""})
    assert "tools" not in resolved
    assert resolved.argv() == ("--mode", "a")


def test_env_vars_and_the_env_a_value_needs() -> None:
    assert resolve_options("h", DECLARED, {"colour": "blue"}).env() == {"COLOUR": "blue"}
    assert resolve_options("h", DECLARED, {"colour": "red"}).env() == {
        "COLOUR": "red",
        "ALARM": "1",
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"nope": "1", "also": "2"}, r"unknown h option\(s\) also, nope \(known: mode, tools, "),
        ({"mode": "c"}, "h option mode must be one of a, b"),
        ({"mode": ""}, "h option mode must be one of a, b"),
        ({"depth": "0"}, "h option depth must be an integer from 1 to 3"),
        ({"depth": "two"}, "h option depth must be an integer from 1 to 3"),
        ({"depth": ""}, "h option depth must be an integer from 1 to 3"),
    ],
)
def test_bad_options_are_refused_in_one_place(given: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_options("h", DECLARED, given)


@pytest.mark.parametrize("adapter", adapters(), ids=lambda a: a.name)
def test_every_adapter_declares_well_formed_options(adapter: object) -> None:
    options = adapter.options  # type: ignore[attr-defined]
    keys = [o.key for o in options]
    assert len(set(keys)) == len(keys)
    for option in options:
        assert option.help
        if option.default is not None:
            assert option.problem(adapter.name, option.default) is None  # type: ignore[attr-defined]
        assert isinstance(option.target, (CliFlag, EnvVar, ConfigKey))
    # its defaults resolve (nothing given is always a valid request)
    resolve_options(adapter.name, options, {})  # type: ignore[attr-defined]

"""Launch options as typed descriptors, resolved once for every harness.

`roller collect --option KEY=VALUE` reaches an adapter as strings. Each adapter declares
the keys it takes as `LaunchOption`s (the model is Harbor's `CliFlag`/`EnvVar`
descriptors, DESIGN.md point 5): where the value goes, what values are allowed, the
default, and a help line. `resolve_options` is the one place that checks them, so every
harness refuses the same way:
- an unknown key is a `UsageError` naming the known ones (a typo is never dropped);
- a value outside `choices`, or not an integer within `integer`, is a `UsageError`;
- a key not given takes its `default`; with `empty_drops`, an explicitly empty value
  removes the option, default included (the harness's own default then applies).
Targets: `CliFlag` (the value is that flag's argument; `LaunchOptions.argv()` yields them
in declaration order), `EnvVar` (the value is that variable; `LaunchOptions.env()`),
`ConfigKey` (the adapter writes the value into the config file it generates; `where`
names the key, for people). `env_when` adds variables a particular value needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from roller.errors import UsageError


@dataclass(frozen=True)
class CliFlag:
    flag: str


@dataclass(frozen=True)
class EnvVar:
    name: str


@dataclass(frozen=True)
class ConfigKey:
    where: str


Target = CliFlag | EnvVar | ConfigKey


@dataclass(frozen=True)
class LaunchOption:
    """One `--option` key a harness takes (see the module docstring)."""

    key: str
    target: Target
    help: str
    choices: tuple[str, ...] | None = None
    default: str | None = None
    integer: tuple[int, int] | None = None
    empty_drops: bool = False
    env_when: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def problem(self, harness: str, value: str) -> str | None:
        """Why `value` is refused for this option, or None."""
        if self.choices is not None and value not in self.choices:
            return f"{harness} option {self.key} must be one of {', '.join(self.choices)}"
        if self.integer is not None:
            low, high = self.integer
            if not (value.isdigit() and low <= int(value) <= high):
                return f"{harness} option {self.key} must be an integer from {low} to {high}"
        return None


@dataclass(frozen=True)
class LaunchOptions:
    """The options of one launch, checked, defaults applied: key -> value."""

    declared: tuple[LaunchOption, ...]
    values: Mapping[str, str]

    def __getitem__(self, key: str) -> str:
        return self.values[key]

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def argv(self) -> tuple[str, ...]:
        """`flag value` for every `CliFlag` option that has a value, in declaration order."""
        out: list[str] = []
        for option in self.declared:
            if isinstance(option.target, CliFlag) and option.key in self.values:
                out += [option.target.flag, self.values[option.key]]
        return tuple(out)

    def env(self) -> dict[str, str]:
        """The variables `EnvVar` options set, and those a chosen value needs."""
        env: dict[str, str] = {}
        for option in self.declared:
            value = self.values.get(option.key)
            if value is None:
                continue
            if isinstance(option.target, EnvVar):
                env[option.target.name] = value
            env.update(option.env_when.get(value, {}))
        return env


def resolve_options(
    harness: str, declared: Sequence[LaunchOption], given: Mapping[str, str]
) -> LaunchOptions:
    """`given` checked against `declared` (UsageError on any problem), defaults applied."""
    known = [o.key for o in declared]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise UsageError(
            f"unknown {harness} option(s) {', '.join(unknown)} (known: {', '.join(known)})"
        )
    values: dict[str, str] = {}
    for option in declared:
        value = given.get(option.key)
        if value is None:
            if option.default is not None:
                values[option.key] = option.default
            continue
        if value == "" and option.empty_drops:
            continue
        problem = option.problem(harness, value)
        if problem is not None:
            raise UsageError(problem)
        values[option.key] = value
    return LaunchOptions(tuple(declared), values)

"""Reading scenario TOML files, and the built-in catalogue shipped as package data.

Rules kept here:
- Every problem in a file is a `ConfigError` that names the file, the rule (number and
  name) and the key, so a scenario author never sees a traceback.
- Unknown keys are errors, not ignored: a misspelt matcher would otherwise silently match
  everything.
- A scenario is chosen by built-in name or by path; a path wins when both could apply.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from roller.errors import ConfigError
from roller.harnesses.tools import ROLES, Role
from roller.mock.request_view import RequestKind
from roller.mock.roles import ROLE_PARAMS, ROLE_REQUIRED, CallSpec
from roller.mock.scenario import DEFAULT_TEXT, DEFAULT_TITLE, Match, Rule, Scenario
from roller.wire.types import PROTOCOL_NAMES

_TOP_KEYS = {"name", "description", "models", "delay_ms", "default_text", "title_text", "rules"}
_STRING_LIST_MATCHERS = (
    "protocol",
    "model",
    "tools_offered_any",
    "tools_offered_all",
    "tools_offered_none",
    "system_contains",
    "user_text_contains",
    "last_user_text_contains",
    "tool_result_contains",
    "last_tool_result_contains",
    "context_contains",
    "not_context_contains",
    "called_with",
    "not_called_with",
)
_RULE_KEYS = {
    "name",
    "kind",
    "turn",
    "last_message_role",
    "called",
    "not_called",
    "text",
    "tool_calls",
    "json",
    "delay_ms",
    "children_pending",
    *_STRING_LIST_MATCHERS,
}
_KINDS: tuple[RequestKind, ...] = get_args(RequestKind)


def builtin_scenarios() -> dict[str, str]:
    """Built-in scenario name -> its one-line description, sorted by name."""
    found = {}
    for entry in sorted(_builtin_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            name = entry.name.removesuffix(".toml")
            found[name] = parse_scenario(entry.read_text("utf-8"), f"built-in {name}").description
    return found


def load_scenario(name_or_file: str) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    path = Path(name_or_file)
    if path.suffix == ".toml" or path.is_file():
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read scenario file {path}: {exc.strerror}") from exc
        return parse_scenario(text, str(path), default_name=path.stem)
    entry = _builtin_dir() / f"{name_or_file}.toml"
    if not entry.is_file():
        known = ", ".join(builtin_scenarios())
        raise ConfigError(f"no scenario {name_or_file!r}: not a file, nor a built-in ({known})")
    return parse_scenario(entry.read_text("utf-8"), f"built-in {name_or_file}", name_or_file)


def parse_scenario(text: str, source: str, default_name: str | None = None) -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    where = _Where(source)
    where.no_unknown_keys(data, _TOP_KEYS, "top level")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
        raise where.error("`rules` must be an array of tables ([[rules]])")
    rules = tuple(_rule(where.rule(i, r), r) for i, r in enumerate(raw_rules, start=1))
    delay = data.get("delay_ms", 0)
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
        raise where.error("`delay_ms` must be a non-negative integer")
    models = where.strings(data, "models") or ("mock-model",)
    return Scenario(
        name=where.string(data, "name") or default_name or source,
        description=where.string(data, "description") or "",
        source=source,
        rules=rules,
        models=models,
        delay_ms=delay,
        default_text=where.string(data, "default_text") or DEFAULT_TEXT,
        title_text=where.string(data, "title_text") or DEFAULT_TITLE,
    )


def _rule(where: _Where, raw: Mapping[str, Any]) -> Rule:
    where.no_unknown_keys(raw, _RULE_KEYS, "rule")
    kind = raw.get("kind", "agent")
    if kind not in _KINDS:
        raise where.error(f"`kind` must be one of {', '.join(_KINDS)}")
    lists = {key: where.strings(raw, key) for key in _STRING_LIST_MATCHERS}
    for protocol in lists["protocol"]:
        if protocol not in PROTOCOL_NAMES:
            raise where.error(f"unknown protocol {protocol!r} ({', '.join(PROTOCOL_NAMES)})")
    role = raw.get("last_message_role")
    if role is not None and role not in ("user", "tool", "assistant"):
        raise where.error("`last_message_role` must be user, tool or assistant")
    turn_min, turn_max = _turn(where, raw.get("turn"))
    match = Match(
        kind=kind,
        turn_min=turn_min,
        turn_max=turn_max,
        last_message_role=role,
        called=frozenset(where.strings(raw, "called")),
        not_called=frozenset(where.strings(raw, "not_called")),
        children_pending=_flag(where, raw, "children_pending"),
        **lists,
    )
    calls = _calls(where, raw.get("tool_calls", []))
    text = where.string(raw, "text")
    given_json = raw.get("json")
    if given_json is not None and not isinstance(given_json, dict):
        raise where.error("`json` must be a table")
    if given_json is not None and (calls or text is not None):
        raise where.error("`json` cannot be combined with `text` or `tool_calls`")
    if given_json is None and not calls and text is None:
        raise where.error("a rule needs a reply: `text`, `tool_calls` or `json`")
    delay = raw.get("delay_ms")
    if delay is not None and (not isinstance(delay, int) or isinstance(delay, bool) or delay < 0):
        raise where.error("`delay_ms` must be a non-negative integer")
    return Rule(
        name=where.name, match=match, text=text, calls=calls, json=given_json, delay_ms=delay
    )


def _turn(where: _Where, raw: Any) -> tuple[int | None, int | None]:
    if raw is None:
        return None, None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw, raw
    if isinstance(raw, dict) and set(raw) <= {"min", "max"}:
        low, high = raw.get("min"), raw.get("max")
        if all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in (low, high)):
            return low, high
    raise where.error("`turn` must be an integer or a table { min = N, max = M }")


def _flag(where: _Where, raw: Mapping[str, Any], key: str) -> bool | None:
    value = raw.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise where.error(f"`{key}` must be true or false")


def _calls(where: _Where, raw: Any) -> tuple[CallSpec, ...]:
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise where.error("`tool_calls` must be an array of inline tables")
    return tuple(_call(where, i, c) for i, c in enumerate(raw, start=1))


def _call(where: _Where, index: int, raw: Mapping[str, Any]) -> CallSpec:
    at = f"tool call {index}"
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, dict):
        raise where.error(f"{at}: `arguments` must be a table")
    role, tool = raw.get("role"), raw.get("tool")
    if (role is None) == (tool is None):
        raise where.error(f"{at}: give exactly one of `role` or `tool`")
    if tool is not None:
        if not isinstance(tool, str) or not tool:
            raise where.error(f"{at}: `tool` must be a tool name")
        where.no_unknown_keys(raw, {"tool", "arguments", "force"}, at)
        force = raw.get("force", False)
        if not isinstance(force, bool):
            raise where.error(f"{at}: `force` must be true or false")
        return CallSpec(tool=tool, arguments=arguments, force=force)
    if role not in ROLES:
        raise where.error(f"{at}: unknown role {role!r} ({', '.join(ROLES)})")
    known: Role = role
    allowed = ROLE_PARAMS[known]
    where.no_unknown_keys(raw, {"role", "arguments", *allowed}, f"{at} (role {known})")
    params = {k: v for k, v in raw.items() if k in allowed}
    for key, value in params.items():
        if not isinstance(value, allowed[key]) or (
            isinstance(value, bool) and bool not in allowed[key]
        ):
            kind = " or ".join(t.__name__ for t in allowed[key])
            raise where.error(f"{at}: `{key}` must be {kind}")
    for key in ROLE_REQUIRED[known]:
        if key not in params:
            raise where.error(f"{at}: role {known} needs `{key}`")
    return CallSpec(role=known, params=params, arguments=arguments)


class _Where:
    """Error messages that say where in which file the problem is."""

    def __init__(self, source: str, rule: str = "", name: str = "") -> None:
        self.source = source
        self.location = rule
        self.name = name

    def rule(self, index: int, raw: Mapping[str, Any]) -> _Where:
        name = raw.get("name")
        label = name if isinstance(name, str) and name else f"rule-{index}"
        return _Where(self.source, f"rule {index} ({label})", label)

    def error(self, message: str) -> ConfigError:
        place = f"{self.source}: {self.location}" if self.location else self.source
        return ConfigError(f"{place}: {message}")

    def no_unknown_keys(self, raw: Mapping[str, Any], allowed: set[str], what: str) -> None:
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise self.error(f"unknown key(s) in {what}: {', '.join(unknown)}")

    def string(self, raw: Mapping[str, Any], key: str) -> str | None:
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise self.error(f"`{key}` must be a string")
        return value

    def strings(self, raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
        """A string or an array of strings, as a tuple."""
        value = raw.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise self.error(f"`{key}` must be a string or an array of strings")


def _builtin_dir() -> Any:
    return resources.files("roller.mock") / "scenarios"

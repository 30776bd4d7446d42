"""Values built from a JSON schema: tool-call arguments and JSON-mode replies.

Rules kept here:
- Tool arguments fill only what the schema *requires* (optional properties change a
  harness's behaviour, e.g. Qwen Code's `subagent_type`); JSON-mode replies fill every
  declared property, because a client that asked for a schema parses all of it.
- The first choice a schema states wins: `const`, then the first `enum` value, then
  `default`, then a value of the first non-null type. Bounds (`minimum`, `minLength`,
  `minItems`) are honoured so the value validates.
- Gemini's OpenAPI-style schemas (`type: "OBJECT"`) are read like JSON Schema; local
  `$ref`s (`#/$defs/…`, `#/definitions/…`) are followed, cycles stop at a fixed depth.
- Pure and total: any schema, however odd, yields a value; nothing here raises. Nesting
  stops at a fixed depth (an empty object or array there), so recursive schemas end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# Given the property path (e.g. ("result", "response")), the string to put there.
StringSource = Callable[[tuple[str, ...]], str]

_MAX_DEPTH = 8


def default_strings(path: tuple[str, ...]) -> str:
    return "roller"


def fill(
    schema: Any,
    *,
    all_properties: bool = False,
    strings: StringSource = default_strings,
) -> Any:
    """A value that satisfies `schema` (best effort for patterns and formats)."""
    root = schema if isinstance(schema, Mapping) else {}
    return _Filler(root, all_properties, strings).value(schema, (), 0)


class _Filler:
    def __init__(self, root: Mapping[str, Any], all_properties: bool, strings: StringSource):
        self._root = root
        self._all = all_properties
        self._strings = strings

    def value(self, schema: Any, path: tuple[str, ...], depth: int) -> Any:
        # A hard stop for self-referencing combinators; containers stop earlier (below).
        if not isinstance(schema, Mapping) or depth > 2 * _MAX_DEPTH:
            return None
        schema = self._deref(schema)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return next((v for v in enum if v is not None), enum[0])
        if "default" in schema:
            return schema["default"]
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options:
                return self.value(_first_non_null(options), path, depth + 1)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            merged: dict[str, Any] = {}
            for part in all_of:
                if isinstance(part, Mapping):
                    merged.update(self._deref(part))
            return self.value(merged, path, depth + 1)
        kind = _type_of(schema)
        if kind == "object":
            return self._object(schema, path, depth)
        if kind == "array":
            return self._array(schema, path, depth)
        if kind == "string":
            return _pad(self._strings(path), schema)
        if kind == "integer":
            return int(_number(schema, integer=True))
        if kind == "number":
            return _number(schema, integer=False)
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        return self._strings(path)

    def _deref(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        for _ in range(_MAX_DEPTH):
            ref = schema.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/"):
                return schema
            target: Any = self._root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, Mapping) else None
            if not isinstance(target, Mapping):
                return {}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def _object(self, schema: Mapping[str, Any], path: tuple[str, ...], depth: int) -> Any:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or depth >= _MAX_DEPTH:
            return {}
        required = schema.get("required")
        wanted: list[str]
        if self._all:
            wanted = list(properties)
        else:
            wanted = [str(n) for n in required] if isinstance(required, list) else []
        return {
            name: self.value(properties.get(name, {}), (*path, name), depth + 1) for name in wanted
        }

    def _array(self, schema: Mapping[str, Any], path: tuple[str, ...], depth: int) -> Any:
        minimum = schema.get("minItems")
        count = minimum if isinstance(minimum, int) and minimum > 0 else 0
        if depth >= _MAX_DEPTH:
            return []
        if self._all:
            count = max(count, 1)
        items = schema.get("items", {})
        return [self.value(items, path, depth + 1) for _ in range(count)]


def _first_non_null(options: list[Any]) -> Any:
    for option in options:
        if isinstance(option, Mapping) and _type_of(option) != "null":
            return option
    return options[0]


def _type_of(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if isinstance(k, str) and k.lower() != "null"), None)
    if isinstance(kind, str):
        return kind.lower()
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


def _number(schema: Mapping[str, Any], *, integer: bool) -> float:
    value = 1.0
    low = schema.get("minimum")
    exclusive_low = schema.get("exclusiveMinimum")
    high = schema.get("maximum")
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = float(low)
    elif isinstance(exclusive_low, int | float) and not isinstance(exclusive_low, bool):
        value = float(exclusive_low) + (1 if integer else 0.5)
    if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
        value = float(high)
    return value


def _pad(text: str, schema: Mapping[str, Any]) -> str:
    low = schema.get("minLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    high = schema.get("maxLength")
    if isinstance(high, int) and high >= 0 and len(text) > high:
        text = text[:high]
    return text

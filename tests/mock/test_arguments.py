from __future__ import annotations

from roller.mock.arguments import fill


def test_only_required_properties_by_default() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    assert fill(schema) == {"a": "roller"}
    assert fill(schema, all_properties=True) == {"a": "roller", "b": 1}


def test_no_required_list_means_nothing_is_required_for_tool_arguments() -> None:
    schema = {"type": "object", "properties": {"subagent_type": {"type": "string"}}}
    assert fill(schema) == {}


def test_const_enum_and_default_are_preferred_in_that_order() -> None:
    schema = {
        "type": "object",
        "properties": {
            "c": {"const": "fixed", "enum": ["x"]},
            "e": {"type": "string", "enum": [None, "flash", "pro"]},
            "d": {"type": "integer", "default": 7},
        },
        "required": ["c", "e", "d"],
    }
    assert fill(schema) == {"c": "fixed", "e": "flash", "d": 7}


def test_nested_objects_arrays_and_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "result": {
                "type": "object",
                "properties": {"response": {"type": "string", "minLength": 10}},
                "required": ["response"],
            },
            "targets": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "score": {"type": "integer", "minimum": 5, "maximum": 100},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.25},
            "flag": {"type": "boolean"},
            "nothing": {"type": "null"},
            "short": {"type": "string", "maxLength": 3},
        },
        "required": ["result", "targets", "score", "ratio", "flag", "nothing", "short"],
    }
    assert fill(schema) == {
        "result": {"response": "rollerxxxx"},
        "targets": ["roller", "roller"],
        "score": 5,
        "ratio": 0.25,
        "flag": False,
        "nothing": None,
        "short": "rol",
    }


def test_json_mode_fills_one_item_per_array() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
    }
    assert fill(schema, all_properties=True) == {"tags": ["roller"]}


def test_gemini_openapi_types_are_case_insensitive() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "reasoning": {"type": "STRING"},
            "model_choice": {"type": "STRING", "enum": ["flash", "pro"]},
        },
        "required": ["reasoning", "model_choice"],
    }
    assert fill(schema) == {"reasoning": "roller", "model_choice": "flash"}


def test_nullable_unions_and_combinators_pick_the_non_null_branch() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["null", "integer"]},
            "b": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            "c": {"allOf": [{"properties": {"x": {"type": "string"}}, "required": ["x"]}]},
        },
        "required": ["a", "b", "c"],
    }
    assert fill(schema) == {"a": 1, "b": "roller", "c": {"x": "roller"}}


def test_local_refs_are_followed_and_cycles_stop() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}},
                "required": ["name", "child"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    value = fill(schema)
    depth = 0
    while value:
        assert value["name"] == "roller"
        value = value["child"]
        depth += 1
    assert value == {} and 3 < depth < 20


def test_string_source_sees_the_property_path() -> None:
    schema = {
        "type": "object",
        "properties": {"report": {"type": "object", "properties": {"Summary": {"type": "string"}}}},
    }
    value = fill(schema, all_properties=True, strings="/".join)
    assert value == {"report": {"Summary": "report/Summary"}}


def test_garbage_schemas_still_yield_a_value() -> None:
    for schema in (None, 3, "x", [], {"type": 5}, {"$ref": "#/nowhere"}, {"$ref": "http://x"}):
        fill(schema)
    assert fill({"$ref": "#/nowhere"}) == "roller"
    assert fill({"type": "object"}) == {}

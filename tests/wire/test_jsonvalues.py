"""`parse_json`: orjson reads first, and the result is always the `json` module's
(value, or failure), over arbitrary text and the cases where the two readers differ."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire.jsonvalues import parse_json
from tests.wire.settings import FUZZ


def _by_json(text: str) -> tuple[Any, str | None]:
    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.JSONDecoder(parse_constant=reject).decode(text), None
    except RecursionError:
        return None, "JSON nested too deeply"
    except ValueError as err:
        return None, str(err)


def _same(text: str) -> None:
    got, expected = parse_json(text), _by_json(text)
    assert repr(got) == repr(expected)  # repr: -0.0, key order and int/float kept apart


_pieces = st.sampled_from(
    ['{', '}', '[', ']', '"', ',', ':', '0', '1', '9', '-', '+', '.', 'e', 'E', ' ', '\n',
     'true', 'false', 'null', 'NaN', 'Infinity', '"a"', '\\u00e9', '\\ud800', '\\udc00',
     '\\"', '\x01', '1e400', '18446744073709551616', '9223372036854775807', '\ufeff', '\ud800']
)  # fmt: skip


@FUZZ
@given(st.lists(_pieces, max_size=16).map("".join) | st.text(max_size=12))
def test_parse_json_is_the_json_module(text: str) -> None:
    _same(text)


@pytest.mark.parametrize(
    "text",
    [
        "123456789012345678901234567890",  # past 64 bits: orjson would give a float
        "-9223372036854775809",
        '{"a": 1e400}',  # json: inf; orjson refuses
        '"\\ud800"',  # a lone surrogate escape: json reads it, orjson refuses
        "NaN",
        '{"a":1,"b":2,"a":3}',
        "[" * 300 + "]" * 300,  # deeper than the brackets orjson is trusted with
        "[" * 5000 + "]" * 5000,
        "",
        "1 2",
    ],
)
def test_where_the_readers_differ_json_decides(text: str) -> None:
    _same(text)


def test_bytes_are_read_as_replaced_utf8() -> None:
    assert parse_json(b'"\xff"') == ('"\ufffd"'[1:-1], None)

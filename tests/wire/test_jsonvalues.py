"""`parse_json` gives exactly what the standard library's decoder gives, orjson or not.

The reference is the decoder alone (`decoded`: bytes decoded with replacement, as
before orjson): values compared by type and value (1 and 1.0 and True are different
answers), failure messages compared as text.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roller.wire.jsonvalues import MAX_FAST_BRACKETS, decoded, parse_all, parse_json
from tests.wire.settings import FUZZ


def typed(value: Any) -> Any:
    """`value` with every scalar's type and exact form kept, for an exact comparison."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    return (type(value).__name__, value)


def same(text: str | bytes) -> None:
    got, expected = parse_json(text), decoded(text)
    assert (typed(got[0]), got[1]) == (typed(expected[0]), expected[1]), text


EDGES: list[str | bytes] = [
    "",
    " ",
    "{}",
    " {} ",
    '{"a":1,"a":2}',
    "123456789012345678",
    "1234567890123456789",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "123456789012345678901234567890",
    '{"id": 12345678901234567890123}',
    "1E400",
    "-1e400",
    "[1e309]",
    "1.5e-400",
    "-0",
    "-0.0",
    "0.1",
    "1.7976931348623157e308",
    "5e-324",
    "NaN",
    "[Infinity]",
    "-Infinity",
    '"\\ud800"',
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    '"\x00"',
    '"\x1f"',
    '"\u2028"',
    "\ufeff{}",
    b"\xef\xbb\xbf{}",
    b'"\xff"',
    b'{"a": "\xc3"}',
    "\ud800",
    "[1,]",
    '{"a":1,}',
    "[1] x",
    "01",
    "1.",
    ".5",
    "true",
    "null",
    "[true, false, null]",
    '{"a": [1, 2.5, "x", {"b": null}]}',
    "[" * 300 + "]" * 300,
    "[" * (MAX_FAST_BRACKETS - 1) + "]" * (MAX_FAST_BRACKETS - 1),
    "[" * MAX_FAST_BRACKETS + "]" * MAX_FAST_BRACKETS,
    "[" * 1000 + "]" * 1000,
    "[" * 1100 + "]" * 1100,
    "{" * 2000,
]


@pytest.mark.parametrize("text", EDGES)
def test_edges_match_the_decoder(text: str | bytes) -> None:
    same(text)
    if isinstance(text, str):
        same(text.encode("utf-8", errors="surrogatepass"))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(json_values, st.booleans())
def test_generated_documents_match_the_decoder(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    same(text)
    same(text.encode("utf-8", errors="surrogatepass"))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_match_the_decoder(raw: bytes) -> None:
    same(raw)
    same(b'{"k": "' + raw + b'"}')


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_alike(value: float) -> None:
    for text in (repr(value), f"{value:.17e}", f"{value:.6g}"):
        same(text)


# An independent reference: a decoder built here, not `decoded`, over pieces chosen where
# the two readers differ.


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


def _cut_from_one_body(texts: list[str]) -> bytes:
    """A body the texts are cut from, as an SSE stream's events are from its body."""
    return b"".join(b"data: " + t.encode("utf-8", errors="surrogatepass") + b"\n\n" for t in texts)


# (the deeply nested ones are the guard's bracket count, which test_parse_all_guards_by_
# the_body takes; compared here they would exhaust `typed`'s recursion)
_EDGE_TEXTS = [t for t in EDGES if isinstance(t, str) and t.count("[") < 200]


@given(
    st.lists(
        st.sampled_from(_EDGE_TEXTS)
        | json_values.map(lambda v: json.dumps(v, ensure_ascii=False))
        | st.text(max_size=40),
        max_size=12,
    )
)
def test_parse_all_is_parse_json_for_each(texts: list[str]) -> None:
    within = _cut_from_one_body(texts)
    got = parse_all(texts, within)
    expected = [parse_json(t) for t in texts]
    assert [(typed(v), e) for v, e in got] == [(typed(v), e) for v, e in expected]


def test_parse_all_guards_by_the_body() -> None:
    # a body orjson cannot be trusted with (a 19-digit run): every text takes parse_json,
    # here the decoder's exact integer, not orjson's float
    texts = ['{"n": 12345678901234567890123}', '{"a": 1}']
    got = parse_all(texts, _cut_from_one_body(texts))
    assert got == [({"n": 12345678901234567890123}, None), ({"a": 1}, None)]
    assert type(got[0][0]["n"]) is int
    # nesting the decoder refuses (orjson would read it): the decoder's refusal
    deep = ["[" * 1100 + "]" * 1100, "[1]"]
    assert parse_all(deep, _cut_from_one_body(deep)) == [parse_json(t) for t in deep]
    assert parse_all(deep, _cut_from_one_body(deep))[0][1] is not None

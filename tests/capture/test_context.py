"""`parse_context`'s fast reader (`exact_json`) gives exactly what Python's reader gives.

orjson reads most bodies; wherever it refuses a body or could read it differently the
body goes to `json.loads` (`parse_context_slowly`, the meaning kept). Each case here is
one where the two readers differ: the records must not.
"""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pydantic_core
import pytest

from roller.capture import exact_json
from roller.capture.context import (
    ParsedContext,
    context_json,
    parse_context,
    parse_context_slowly,
)

# Bodies orjson refuses, or reads to another value, or writes back differently.
EDGES = {
    "lone surrogate": b'{"text":"\\ud800 alone"}',
    "paired surrogates": b'{"text":"\\ud83d\\ude00"}',
    "NaN": b'{"temperature":NaN}',
    "Infinity": b'{"t":[Infinity,-Infinity]}',
    "past a double": b'{"t":1e400}',
    "u64 + 1": b'{"seed":18446744073709551616}',
    "i64 - 1": b'{"seed":-9223372036854775809}',
    "u64 max": b'{"seed":18446744073709551615}',
    "wide, not compact": b'{"seed": 123456789012345678901234567890}',
    "wide float": b'{"p":123456789012345678901234567890.5}',
    "19 digits in a string": b'{"s": "1234567890123456789"}',
    "BOM": b'\xef\xbb\xbf{"a":1}',
    "UTF-16": '{"a":1}'.encode("utf-16"),
    "not UTF-8": b'{"a":"\xff"}',
    "not JSON": b'{"a":',
    "trailing garbage": b'{"a":1} x',
    "4301 digits": b"[" + b"7" * 4301 + b"]",
    "deep": b"[" * 1100 + b"]" * 1100,
    # orjson reads 1,024 levels but writes 255: deeper is Python's and pydantic's to say
    "254 deep": b"[" * 254 + b"]" * 254,
    "255 deep": b"[" * 255 + b"]" * 255,
    "300 deep": b'{"a":' * 300 + b"1" + b"}" * 300,
    "null": b"null",
    "empty": b"",
    "duplicate keys": b'{"a":1,"b":2,"a":3}',
    "not compact": b'{"a": [1, 2.50, -0, 1E5], "b" : "x"}',
    "control escapes": b'{"c":"\\u0000\\u001f\\b\\f\\n\\r\\t\\/\\u2028"}',
    "negative zero": b"[-0.0,-0,0e0]",
    "19-digit timestamp": b'{"k":"req","n":5,"t":1764547200000000000}',
    "i64 min": b'{"t":-9223372036854775808}',
}


def _same(a: Any, b: Any) -> bool:
    """Equal, with the types and float bits (NaN, -0.0) that JSON output would show."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("d", a) == struct.pack("d", b) or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _record_json(parsed: ParsedContext) -> bytes | str | None:
    """The record's context bytes, or the error making them raised (pydantic cannot
    write a lone surrogate: neither path may then give bytes)."""
    try:
        return parsed.record_json()
    except pydantic_core.PydanticSerializationError as exc:
        return type(exc).__name__


def _pydantic_json(value: Any) -> bytes | str | None:
    try:
        return None if value is None else pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError as exc:
        return type(exc).__name__


@pytest.mark.parametrize("body", list(EDGES.values()), ids=list(EDGES))
def test_fast_reader_gives_what_pythons_reader_gives(body: bytes) -> None:
    fast, slow = parse_context(body), parse_context_slowly(body)
    assert fast.error == slow.error
    assert _same(fast.value, slow.value)
    # the record's context bytes are pydantic's for Python's value, however they were made
    want = _pydantic_json(slow.value)
    assert _record_json(fast) == want
    assert _record_json(slow) == want


def test_the_fallback_is_taken_where_orjson_would_differ() -> None:
    assert parse_context(EDGES["u64 + 1"]).value == {"seed": 2**64}
    assert parse_context(EDGES["wide, not compact"]).value["seed"] == 123456789012345678901234567890
    assert math.isnan(parse_context(EDGES["NaN"]).value["temperature"])
    # Python reads a lone surrogate escape, but no record can hold it (pydantic's writer
    # refuses it): no context, an error that says why, on both paths alike
    lone = parse_context(EDGES["lone surrogate"])
    assert lone.value is None and lone.error is not None and "record" in lone.error
    assert parse_context(EDGES["paired surrogates"]).value == {"text": "\U0001f600"}
    assert parse_context(EDGES["BOM"]).value == {"a": 1}
    assert (
        parse_context(EDGES["4301 digits"]).error
        == parse_context_slowly(b"[" + b"7" * 4301 + b"]").error
    )
    assert parse_context(EDGES["4301 digits"]).error is not None


def test_a_compact_body_is_its_own_record_json() -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"hi \xc3\xa9"}],"t":0.7}'
    parsed = parse_context(body)
    assert parsed.record_json() is body  # not serialized again
    assert context_json(parsed.value) == body


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([rng.randrange(-(2**70), 2**70), rng.randrange(-1000, 1000)])
    if kind == 2:
        bits = struct.unpack("d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return rng.choice([bits, rng.uniform(-1e6, 1e6), float(rng.randrange(10**17))])
    if kind in (3, 4):
        return "".join(
            chr(rng.choice([rng.randrange(0x20), rng.randrange(0x10FFFF)]))
            for _ in range(rng.randrange(6))
        )
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{rng.randrange(5)}": _value(rng, depth + 1) for _ in range(rng.randrange(4))}


@pytest.mark.parametrize("seed", range(4))
def test_random_bodies_read_the_same_either_way(seed: int) -> None:
    """Random JSON values (wide integers, any float's bits, any code point, lone
    surrogates included), written compact and pretty: both readers agree on each."""
    rng = random.Random(seed)
    for _ in range(500):
        value = _value(rng)
        for body in (
            json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            ),
            json.dumps(value, indent=1).encode(),
        ):
            fast, slow = parse_context(body), parse_context_slowly(body)
            assert fast.error == slow.error, body
            assert _same(fast.value, slow.value), body
            assert _record_json(fast) == _pydantic_json(slow.value), body
            assert _same(_loads(body, exact_json.loads), _loads(body, json.loads)), body


def _loads(data: bytes, reader: Any) -> Any:
    try:
        return reader(data)
    except (ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("data", list(EDGES.values()), ids=list(EDGES))
def test_exact_loads_is_json_loads(data: bytes) -> None:
    """The tape's header reader: value or exception (type and message) as json.loads."""
    assert _same(_loads(data, exact_json.loads), _loads(data, json.loads))

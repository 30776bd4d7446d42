"""The gateway's reading of a request body (`roller.gateway.request_body`) gives the
identity rules and the model what the full parse gives them, for every declared harness:
where it reads only the members those rules start at, they hold the full parse's values
(differentially, over generated documents serialized every way and mutated the ways a
body can be odd), and a body that reader refuses gets the full parse."""

from __future__ import annotations

import json
import math
import random
from itertools import product
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roller.gateway.request_body import MODEL, RequestBody, parse_json_body
from roller.harnesses import harness_names, identify, registry
from tests.gateway.test_headers import _samples
from tests.gateway.test_identities import _bodies
from tests.wire.settings import EXAMPLES, TIMEOUT

HARNESSES = [*harness_names(), "no-such-harness"]


def _members(harness: str) -> set[str] | None:
    paths = registry().wire(harness).body_paths()
    return None if paths is None or not all(paths) else {MODEL, *(p[0] for p in paths)}


def _seen(value: Any, members: set[str] | None) -> Any:
    """What the rules and the model can see of a parsed body: its members (looked up by
    key: their order at the top does not matter, within them it does)."""
    if members is None or not isinstance(value, dict):
        return value
    return {k: value[k] for k in sorted(members) if k in value}


def _same(a: Any, b: Any) -> bool:
    """Equal as parsed JSON, in order, NaN equal to NaN, 1 not equal to 1.0 or True."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["model", "metadata", "user_id", "k", "é"]), inner, max_size=4
        ),
    ),
    max_leaves=20,
)


def _document(rng: random.Random, value: Any) -> bytes:
    """`value` as a JSON object (with the members the rules read), serialized one of the
    ways a client may, then sometimes made odd."""
    body = {"model": value, "messages": [value], "metadata": {"user_id": value}}
    if rng.random() < 0.5:
        body = {k: body[k] for k in rng.sample(list(body), rng.randint(0, 3))}
    text = json.dumps(body, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
    what = rng.randrange(14)
    if what == 0:
        text = text[: rng.randrange(len(text) + 1)]  # cut
    elif what == 1:
        text = text[:-1] + ', "model": "again"}' if len(text) > 2 else text  # a key twice
    elif what == 2:
        text = text.replace('"user_id"', '"user_\\u0069d"')  # an escaped key
    elif what == 3:
        text = '{"pad": ' + "[" * rng.choice([200, 260, 990]) + "]" * 1 + ", " + text[1:]
    elif what == 4:
        text = text.replace("}", "} ", 1) + rng.choice(["", " x", "\n"])
    elif what == 5:
        text = text.replace('"messages"', '"\\ud800"')  # a lone surrogate in a key
    elif what == 6:
        text = '{"big": ' + "7" * rng.choice([300, 4300, 4301]) + ", " + text[1:]
    raw = text.encode("utf-8", "surrogatepass")
    if what == 7:
        raw = b"\xef\xbb\xbf" + raw
    elif what == 8:
        raw = raw.replace(b"e", b"\xff", 1)
    elif what == 9:
        raw = raw.replace(b'"', b'"\x01', 1)
    elif what == 10:  # invalid UTF-8 where a members' reader skips: the whole body is not JSON
        raw = raw.replace(b'"messages": [', b'"messages": ["\xff", ', 1)
    elif what == 11:  # a surrogate encoded as UTF-8 where it skips: JSON, as Python decodes it
        raw = raw.replace(b'"messages": [', b'"messages": ["\xed\xa0\x80", ', 1)
    return raw


@pytest.mark.timeout(TIMEOUT)
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.randoms(use_true_random=True), _values)
def test_the_members_read_are_the_full_parses(rng: random.Random, value: Any) -> None:
    raw = _document(rng, value)
    full, stdlib = parse_json_body(raw), _stdlib(raw)
    bodies = RequestBody()
    for harness in HARNESSES:
        members = _members(harness)
        seen = _seen(bodies.read(raw, harness), members)
        # The standard library's values (the members' reader), or the full parse's (orjson
        # where it parses: a float for an integer past 64 bits), never anything else.
        assert _same(seen, _seen(stdlib, members)) or _same(seen, _seen(full, members)), (
            harness,
            raw[:300],
        )
        assert (seen is None) == (full is None)


def _stdlib(raw: bytes) -> object:
    """`parse_json_body` by the standard library alone."""
    if not raw or raw[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def test_a_profile_that_declares_its_paths_reads_only_its_members() -> None:
    raw = json.dumps(
        {"model": "m", "metadata": {"user_id": "u"}, "messages": [{"role": "user"}] * 50}
    ).encode()
    bodies = RequestBody()
    read = bodies.read(raw, "claude-code")
    assert read == {"model": "m", "metadata": {"user_id": "u"}}
    assert bodies.read(b' {"model": "m"}', "claude-code") is None  # not an object or array
    assert bodies.read(b"[1]", "claude-code") == [1]  # an array: the full parse
    assert bodies.read(b'{"model": "\\ud800"}', "claude-code") == {"model": "\ud800"}
    # What the members' reader skips is still checked: invalid UTF-8 anywhere is no JSON.
    assert bodies.read(b'{"messages": ["\xff"], "model": "m"}', "claude-code") is None
    assert bodies.read('{"messages": ["\u00e9"], "model": "m"}'.encode(), "claude-code") == {
        "model": "m"
    }
    # Nor does it hold an integer it skips to Python's digit limit: one past it, at any
    # offset from the samples `_long_digits` takes, is no JSON; one at the limit is.
    for pad in range(0, 2300, 89):
        big = b'{"pad": "' + b"x" * pad + b'", "big": 7%s, "model": "m"}'
        assert bodies.read(big % (b"7" * 4300), "claude-code") is None, pad
        at_limit = bodies.read(big % (b"7" * 4299), "claude-code")
        assert isinstance(at_limit, dict) and at_limit["model"] == "m", pad
    # What it refuses that Python reads (NaN) gets the full parse.
    read = bodies.read(b'{"x": NaN, "model": "m"}', "claude-code")
    assert isinstance(read, dict) and math.isnan(read["x"]) and read["model"] == "m"


def _model(body: object) -> object:
    return body.get(MODEL) if isinstance(body, dict) else None


def test_the_identity_and_model_from_the_members_are_the_full_bodys() -> None:
    bodies = RequestBody()
    compared = 0
    for harness, body in product(HARNESSES, _bodies()[::3]):
        raw = json.dumps(body).encode()
        full, read = parse_json_body(raw), bodies.read(raw, harness)
        assert _same(_model(read), _model(full))
        for sample, trust in product(_samples()[::4], (True, False)):
            assert identify(harness, sample, read, trust_roller=trust) == identify(
                harness, sample, full, trust_roller=trust
            ), (harness, body)
            compared += 1
    assert compared > 1000

"""roller.export.continuity reads each call once and holds digests of its item keys:
the same answers as comparing the keys themselves, in any order of the calls.

Digest equality is Python's equality of the keys (every pair of awkward keys, and
generated ones); every real capture's continuity is the one computed over the keys as
they are (the digests swapped out), and does not depend on the order calls are read in.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Hashable
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.capture.reader import shared_calls
from roller.export import continuity as module
from roller.export.continuity import continuity
from roller.wire import Codec, codec_named
from roller.wire.bodies import BodyCodec
from tests.export.real_captures import RealCaptures

NAN = float("nan")
AWKWARD: list[Hashable] = [
    None,
    "",
    "a",
    "a\x00",
    "\ud800",  # a lone surrogate, as json.loads reads "\\ud800"
    "é",
    "1",
    "I1:",
    "S1:a",
    (),
    ("",),
    ("a",),
    (("a",),),
    ("a", None),
    ("a", ("b", "c")),
    (("a", "b"), "c"),
    ("ab",),
    ("a", "b"),
    0,
    1,
    -1,
    True,
    False,
    0.0,
    -0.0,
    1.0,
    0.5,
    0.1,
    1e300,
    10**300,
    2**53 + 1,
    float(2**53),
    math.inf,
    -math.inf,
    ("x", True),
    ("x", 1),
    ("x", 1.0),
    ("x", False, ("t", "u")),
    ("x", 0, ("t", "u")),
    frozenset({"a"}),
    NAN,
    ("x", NAN),
]


def _same(digest: module._Digests, a: Hashable, b: Hashable) -> bool:
    return digest(a) == digest(b)


def test_awkward_keys_compare_as_python_compares_them() -> None:
    digest = module._Digests()
    for a in AWKWARD:
        for b in AWKWARD:
            assert _same(digest, a, b) == (a == b), (a, b)


def test_equal_keys_share_one_digest_object() -> None:
    digest = module._Digests()
    first, second = (
        digest(("message", "user", (("text", "hi"),))),
        digest(("message", "user", (("text", "h" + "i"),))),
    )
    assert isinstance(first, bytes) and first is second
    # a key that cannot be encoded (NaN) is kept as it is
    key = ("x", NAN)
    assert digest(key) is key


def _keys() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.text(max_size=4),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from([0.0, -0.0, 1.0, 0.5, 2.0, math.inf]),
    )
    return st.recursive(
        leaves, lambda inner: st.tuples(inner) | st.tuples(inner, inner), max_leaves=8
    )


@given(_keys(), _keys())
def test_generated_keys_compare_as_python_compares_them(a: Any, b: Any) -> None:
    digest = module._Digests()
    assert _same(digest, a, b) == (a == b)
    assert _same(digest, a, a)


class _Plain:
    """Keys as they are: no digest, no memory of items."""

    def __call__(self, key: Hashable) -> Hashable:
        return key

    def items(self, codec: Codec, items: list[Any]) -> tuple[Hashable, ...]:
        return tuple(k for k in map(codec.item_key, items) if k is not None)

    def prefixes(self, codec: Codec, items: list[Any]) -> list[Hashable]:
        return module._chain(b"", self.items(codec, items))

    def system(self, codec: Codec, system: Any) -> Hashable:
        return system


def test_real_captures_as_over_the_keys_themselves(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    digested = {key: continuity(capture.calls) for key, capture in real_captures.items()}
    shared = {  # contexts that share an earlier call's items: their chain values reused
        key: continuity(shared_calls(capture.calls)) for key, capture in real_captures.items()
    }
    reversed_ = {
        key: continuity(list(capture.calls)[::-1]) for key, capture in real_captures.items()
    }
    with monkeypatch.context() as patch:
        patch.setattr(module, "_Digests", _Plain)
        plain = {key: continuity(capture.calls) for key, capture in real_captures.items()}
    assert digested == shared == plain == reversed_
    flows = [f for found in plain.values() for f in found.values()]
    assert any(f.extends_previous for f in flows)
    assert {f.break_reason for f in flows} >= {"first_call", "not_a_continuation", None}


def test_items_forgotten_and_keyed_again_give_the_same_answers(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the item digests remembered by text are two generations of `limit`: with a tiny
    # limit most items are keyed again, and every answer stays the same
    remembered = {key: continuity(capture.calls) for key, capture in real_captures.items()}
    keyed = 0
    real = BodyCodec.item_key

    def counted(self: BodyCodec, item: Any) -> Any:
        nonlocal keyed
        keyed += 1
        return real(self, item)

    monkeypatch.setattr(BodyCodec, "item_key", counted)
    monkeypatch.setattr(module, "_Digests", functools.partial(module._Digests, limit=2))
    forgetting = {key: continuity(capture.calls) for key, capture in real_captures.items()}
    assert forgetting == remembered
    resent = sum(
        len(history.items)
        for capture in real_captures.values()
        for c in capture.calls
        if (codec := codec_named(c.protocol)) and c.kind == "generation"
        if (history := codec.history(c.context))
    )
    assert keyed > resent // 2, (keyed, resent)


def test_each_distinct_item_is_keyed_once(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation resends its items on every call: continuity keys each distinct item
    once (remembered by its exact JSON text), however many calls carry it."""
    keyed: list[str] = []
    real = BodyCodec.item_key  # the class of every codec

    def counted(self: BodyCodec, item: Any) -> Any:
        keyed.append(json.dumps([self.name, item]))
        return real(self, item)

    monkeypatch.setattr(BodyCodec, "item_key", counted)
    carried = 0
    for capture in real_captures.values():
        keyed.clear()
        continuity(capture.calls)
        assert len(keyed) == len(set(keyed)), "an item was keyed twice"
        carried += len(keyed)
    monkeypatch.undo()
    resent = 0
    for capture in real_captures.values():
        for c in capture.calls:
            codec = codec_named(c.protocol)
            history = codec.history(c.context) if codec and c.kind == "generation" else None
            resent += len(history.items) if history else 0
    assert 0 < carried < resent, (carried, resent)


def test_an_item_holding_nan_is_not_taken_for_one_holding_null() -> None:
    """orjson writes NaN as `null`: the digest remembered by an item's text must not be
    reused for an item whose text is the same but whose value is not."""
    codec = codec_named("anthropic-messages")
    assert codec is not None

    def item(x: object) -> dict[str, object]:
        tool = {"type": "tool_use", "id": "t1", "name": "N", "input": {"x": x}}
        return {"role": "assistant", "content": [tool]}

    nan = item(math.nan)
    assert orjson.dumps(nan) == orjson.dumps(item(None))
    digest = module._Digests()
    null_digests = digest.items(codec, [item(None)])
    assert digest.items(codec, [nan]) != null_digests
    assert digest.items(codec, [item(None)]) == null_digests

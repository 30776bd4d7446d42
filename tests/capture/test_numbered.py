"""Numbered per-call lists behave as the lists they stand for."""

from __future__ import annotations

from array import array
from collections import Counter

import orjson
from hypothesis import given
from hypothesis import strategies as st

from roller.capture.models import Evidence
from roller.capture.models.numbered import (
    IdsBuilder,
    NumberedEvidence,
    NumberedIds,
    call_evidence,
    call_ids_of,
    number_of,
    numbered_evidence,
    numbered_ids,
    selected_ids,
)

ID = st.one_of(
    st.integers(min_value=0, max_value=10**7).map(lambda n: f"call-ab-{n:05d}"),
    st.integers(min_value=0, max_value=99).map(lambda n: f"call-cd-{n:05d}"),
    st.text(max_size=10),
    st.sampled_from(["call-ab-0012", "call-ab-012345", "x1", "call-ab1-00001"]),
)


@given(ids=st.lists(ID, max_size=30) | st.lists(ID, max_size=3).map(lambda x: x * 3), probe=ID)
def test_numbered_ids_are_the_list(ids: list[str], probe: str) -> None:
    found = numbered_ids(ids)
    assert list(found) == ids and len(found) == len(ids)
    assert found == ids and ids == found
    assert found != [*ids, "x"]
    assert [found[i] for i in range(-len(ids), len(ids))] == ids + ids
    assert found[1:-1:2] == ids[1:-1:2]
    assert found + ["x"] == [*ids, "x"] and ["x"] + found == ["x", *ids]  # noqa: RUF005
    assert found + found == ids + ids
    assert (probe in found) == (probe in ids)
    assert all(x in found for x in ids)
    assert numbered_ids(ids) == found
    built = IdsBuilder()
    for x in ids:
        built.append(x)
    held = built.ids()
    assert held == ids
    assert (probe in held) == (probe in ids) and (probe in held) == (probe in ids)  # asked twice
    assert held.duplicates() == sorted(k for k, n in Counter(ids).items() if n > 1)


@given(numbers=st.lists(st.integers(min_value=0, max_value=10**6), max_size=30))
def test_finalize_s_numbered_lists_are_the_lists_they_name(numbers: list[int]) -> None:
    ids = call_ids_of("call-ab-", range(10**6 + 1))
    mine = selected_ids(ids, numbers)
    assert isinstance(mine, NumberedIds)
    plain = [f"call-ab-{n:05d}" for n in numbers]
    assert mine == plain == numbered_ids(plain)
    native = [Evidence(source="native:a", ref="r", retained=False)]
    declared = [Evidence(source="declared:single_agent", ref=None, retained=True)]
    evidence = call_evidence(ids, numbers, before=native, after=declared)
    assert isinstance(evidence, NumberedEvidence)
    expected = native + [Evidence(source=f"call:{c}", ref=None, retained=True) for c in plain]
    assert list(evidence) == expected + declared
    assert numbered_evidence(expected + declared) == evidence


def test_an_unsafe_prefix_stays_a_list_and_ids_parse_exactly() -> None:
    assert isinstance(call_ids_of('call-"q"-', [1]), list)
    assert isinstance(call_ids_of("call-7", [1]), list)  # ends with a digit
    assert number_of("call-ab-00012") == ("call-ab-", 12)
    assert number_of("call-ab-123456") == ("call-ab-", 123456)
    assert number_of("call-ab-0012") is None
    assert number_of("call-ab-012345") is None
    assert number_of('call-"-00001') is None


@given(
    prefix=st.sampled_from(["call-ab-", "c%d-", "%%s{}-", "call-ab-x"]),
    numbers=st.lists(st.integers(min_value=0, max_value=10**6), max_size=12),
    other=st.booleans(),
)
def test_the_items_json_is_each_items_json(prefix: str, numbers: list[int], other: bool) -> None:
    """`json_items` writes a numbered item's JSON itself (a `%` format of its number,
    whatever the prefix holds) and any other item by the writer it is given."""
    held = array("q", numbers + ([-1] if other else []))  # -1: an item kept as it is
    ids = NumberedIds(prefix, held, {len(numbers): "x\u00e9"} if other else {})
    written = b"".join(ids.json_items(orjson.dumps, batch=5))
    assert written == b",".join(orjson.dumps(x) for x in ids)
    native = Evidence(source="native:a", ref="r", retained=False)
    evidence = NumberedEvidence(prefix, held, {len(numbers): native} if other else {})
    written = b"".join(evidence.json_items(lambda e: e.model_dump_json().encode(), batch=5))
    assert written == b",".join(e.model_dump_json().encode() for e in evidence)

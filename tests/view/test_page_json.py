"""The page's value table (`roller.view.page_json.Values`): each distinct request value
stored once, a reference for every use, blobs elided once and counted per use."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

from roller.view.blobs import elide
from roller.view.page_json import PageJson, Values

BLOB = base64.b64encode(bytes(range(256)) * 2).decode()


def _table(spool: io.StringIO) -> list[Any]:
    return json.loads("[" + spool.getvalue() + "]")


def test_a_value_is_stored_once_and_named_by_its_place() -> None:
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    first = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    refs = [
        values.ref(first),
        values.ref({"role": "assistant", "content": "hi"}),
        values.ref(first),
    ]
    assert refs == [0, 1, 0]
    assert values.ref(json.loads(json.dumps(first))) == 0  # equal, not the same object
    assert _table(spool) == [first, {"role": "assistant", "content": "hi"}]


def test_values_that_differ_in_any_way_are_kept_apart() -> None:
    """Equal JSON text only: key order, 1 against 1.0 or true, a string against a number."""
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    distinct = [{"a": 1, "b": 2}, {"b": 2, "a": 1}, 1, 1.0, True, "1", None, [], {}, [None]]
    assert [values.ref(v) for v in distinct] == list(range(len(distinct)))
    table = _table(spool)
    assert [json.dumps(v) for v in table] == [json.dumps(v) for v in distinct]


def test_blobs_are_elided_once_and_counted_for_every_use() -> None:
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    image = {"type": "image", "data": BLOB}
    assert values.ref(image) == values.ref(image) == 0
    assert j.elided == 2  # as when each call's request was written whole
    assert spool.getvalue() == j.raw(elide(image)[0])
    assert BLOB not in spool.getvalue()


def test_the_text_is_the_page_s_escaped_json() -> None:
    """`<` and the JS line separators escaped, non-ASCII and lone surrogates kept."""
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    awkward = ["</script><b>", "line\u2028sep\u2029", "é中🙂", "\ud800 lone"]
    for v in awkward:
        values.ref(v)
    text = spool.getvalue()
    assert "<" not in text and "\u2028" not in text and "\u2029" not in text
    assert text == ",".join(j.raw(v) for v in awkward)
    assert json.loads("[" + text + "]") == awkward


def test_a_request_names_its_values() -> None:
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    request = {
        "items": [{"tag": "new", "value": "a"}, {"tag": "same", "value": {"x": 1}}],
        "system": None,
        "tools": [{"name": "t"}],
        "config": {"model": "m"},
    }
    again = {**request, "items": [*request["items"], {"tag": "new", "value": "a"}]}
    assert values.request(request) == {
        "items": [{"tag": "new", "ref": 0}, {"tag": "same", "ref": 1}],
        "system": 2,
        "tools": 3,
        "config": 4,
    }
    named = values.request(again)
    assert named["items"][2] == {"tag": "new", "ref": 0}
    assert values.request({"raw": {"anything": [1]}}) == {"raw": 5}
    assert _table(spool) == [
        "a",
        {"x": 1},
        None,
        [{"name": "t"}],
        {"model": "m"},
        {"anything": [1]},
    ]


def test_a_record_is_a_row_of_places() -> None:
    """A relation: each field a place, its evidence list a list of places, so entries that
    recur across relations are stored once."""
    j, spool = PageJson(), io.StringIO()
    values = Values(j, spool)
    evidence = [{"source": "call:a", "ref": "t1", "retained": True}]
    first = {"type": "result_in_context", "target": "b", "evidence": evidence, "note": None}
    second = {**first, "target": "c", "evidence": [*evidence, {"source": "call:c"}]}
    assert values.row(first) == [0, 1, [2], 3]
    assert values.row(second) == [0, 4, [2, 5], 3]
    table = _table(spool)
    assert [table[i] for i in (0, 4, 2, 5, 3)] == [
        "result_in_context",
        "c",
        *second["evidence"],
        None,
    ]

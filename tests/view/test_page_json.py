"""The page's value table (`roller.view.page_json.Values`): each distinct request value
stored once, a reference for every use, blobs elided once and counted per use; and the
part elements the page's bulky members are written in (`Parts`)."""

from __future__ import annotations

import base64
import io
import json
import re
from typing import Any

import pytest

from roller.view import page_json
from roller.view.blobs import elide
from roller.view.page_json import PageJson, Parts, Values, keyed
from tests.view import page_data

MAIN = '<script type="application/json" id="capture-data">{"values":[]}</script>'
HEAD = '<script type="application/json" class="capture-part" data-key="values">'
BLOB = base64.b64encode(bytes(range(256)) * 2).decode()


class Table:
    """A `Values` writing into a string, read back as the page reads it."""

    def __init__(self) -> None:
        self.j = PageJson()
        self.spool = io.StringIO()
        self.parts = Parts(self.spool, "values", array=True)
        self.values = Values(self.j, self.parts)

    def text(self) -> str:
        """The elements' JSON text, without their tags."""
        self.parts.close()
        return re.sub(r"<script[^>]*>|</script>", "", self.spool.getvalue())

    def read(self) -> list[Any]:
        self.parts.close()
        return list(page_data.data(MAIN + self.spool.getvalue())["values"])


def test_a_value_is_stored_once_and_named_by_its_place() -> None:
    t = Table()
    first = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    refs = [t.values.ref(first), t.values.ref({"role": "assistant", "content": "hi"})]
    assert [*refs, t.values.ref(first)] == [0, 1, 0]
    assert t.values.ref(json.loads(json.dumps(first))) == 0  # equal, not the same object
    assert t.read() == [first, {"role": "assistant", "content": "hi"}]


def test_values_that_differ_in_any_way_are_kept_apart() -> None:
    """Equal JSON text only: key order, 1 against 1.0 or true, a string against a number,
    a short string against a long one (looked up two ways)."""
    t = Table()
    long = "x" * (page_json._SHORT + 1)
    distinct = [{"a": 1, "b": 2}, {"b": 2, "a": 1}, 1, 1.0, True, "1", None, [], {}, [None]]
    distinct += ["null", "x" * page_json._SHORT, long, [long]]
    assert [t.values.ref(v) for v in distinct] == list(range(len(distinct)))
    assert [t.values.ref(v) for v in reversed(distinct)] == list(reversed(range(len(distinct))))
    assert [json.dumps(v) for v in t.read()] == [json.dumps(v) for v in distinct]


def test_blobs_are_elided_once_and_counted_for_every_use() -> None:
    t = Table()
    image = {"type": "image", "data": BLOB}
    assert t.values.ref(image) == t.values.ref(image) == 0
    assert t.j.elided == 2  # as when each call's request was written whole
    assert t.read() == [elide(image)[0]]
    assert BLOB not in t.spool.getvalue()


def test_the_text_is_the_page_s_escaped_json() -> None:
    """`<` and the JS line separators escaped, non-ASCII and lone surrogates kept."""
    t = Table()
    awkward = ["</script><b>", "line\u2028sep\u2029", "é中🙂", "\ud800 lone", "x" * 100 + "<"]
    for v in awkward:
        t.values.ref(v)
    text = t.text()
    assert "<" not in text and "\u2028" not in text and "\u2029" not in text
    assert text == "[" + ",".join(t.j.raw(v) for v in awkward) + "]"
    assert json.loads(text) == awkward


def test_a_request_names_its_values() -> None:
    t = Table()
    request = {
        "items": [{"tag": "new", "value": keyed("a")}, {"tag": "same", "value": keyed({"x": 1})}],
        "system": None,
        "tools": [{"name": "t"}],
        "config": {"model": "m"},
    }
    again = {**request, "items": [*request["items"], {"tag": "new", "value": keyed("a")}]}
    assert t.values.request(request) == {
        "items": [{"tag": "new", "ref": 0}, {"tag": "same", "ref": 1}],
        "system": 2,
        "tools": 3,
        "config": 4,
    }
    named = t.values.request(again)
    assert named["items"][2] == {"tag": "new", "ref": 0}
    assert t.values.request({"raw": {"anything": [1]}}) == {"raw": 5}
    assert t.read() == ["a", {"x": 1}, None, [{"name": "t"}], {"model": "m"}, {"anything": [1]}]


def test_a_keyed_value_takes_the_place_its_value_takes() -> None:
    """An item's text and key, made once for the diff and the table, name the same place
    as the value itself: short strings, booleans and null by themselves, the rest by digest."""
    t = Table()
    long = "x" * 65
    values: list[Any] = ["a", None, long, {"x": 1}, [1, 2], 1, 1.0, True, False, 0, 0.0, "true"]
    places = [t.values.ref(v) for v in values]
    assert [t.values.keyed_ref(keyed(v)) for v in values] == places
    assert len(set(places)) == len(values)
    assert t.read() == values


def test_a_record_is_a_row_of_places() -> None:
    """A relation: each field a place, its evidence list a list of places, so entries that
    recur across relations are stored once."""
    t = Table()
    evidence = [{"source": "call:a", "ref": "t1", "retained": True}]
    first = {"type": "result_in_context", "target": "b", "evidence": evidence, "note": None}
    second = {**first, "target": "c", "evidence": [*evidence, {"source": "call:c"}]}
    assert t.values.row(first) == [0, 1, [2], 3]
    assert t.values.row(second) == [0, 4, [2, 5], 3]
    table = t.read()
    assert [table[i] for i in (0, 4, 2, 5, 3)] == [
        "result_in_context",
        "c",
        *second["evidence"],
        None,
    ]
    third = {"id": "rel-3", **second}
    assert t.values.row(third, literal=frozenset({"id"})) == ["rel-3", 0, 4, [2, 5], 3]
    assert len(t.read()) == 6  # the literal is not in the table


def test_a_nested_entry_is_a_row_of_its_fields_places() -> None:
    """An evidence entry with exactly the declared keys, in their order, is a row of its
    values' places, so a source and a ref that recur are stored once however they pair;
    any other entry is a place, as without `nested`."""
    t = Table()
    keys = ["source", "ref", "retained"]
    first = {"evidence": [{"source": "call:a", "ref": "t1", "retained": True}]}
    second = {
        "evidence": [
            {"source": "call:b", "ref": "t1", "retained": True},
            {"ref": "t1", "source": "call:b", "retained": True},  # another key order
            {"source": "call:b", "ref": "t1"},  # a key missing
            "not an object",
        ]
    }
    assert t.values.row(first, nested={"evidence": keys}) == [[[0, 1, 2]]]
    assert t.values.row(second, nested={"evidence": keys}) == [[[3, 1, 2], 4, 5, 6]]
    table = t.read()
    assert table[:4] == ["call:a", "t1", True, "call:b"]
    assert table[4:] == second["evidence"][1:]


@pytest.mark.parametrize("array", [True, False])
def test_parts_split_between_members_and_read_back_whole(
    array: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each element holds whole members, closes once it holds `PART_CHARS` characters
    (so none holds much more), and the elements put together are the one value."""
    monkeypatch.setattr(page_json, "PART_CHARS", 100)
    out = io.StringIO()
    parts = Parts(out, "calls", array=array)
    members = [json.dumps("m" * (i % 37)) for i in range(200)]
    whole: Any = [] if array else {}
    for i, text in enumerate(members):
        if array:
            parts.add(text)
            whole.append(json.loads(text))
        else:
            parts.add(f'"k{i}":{text}')
            whole[f"k{i}"] = json.loads(text)
    parts.close()
    parts.close()  # closing twice writes nothing more
    elements = re.findall(r'data-key="calls">(.*?)</script>', out.getvalue())
    assert len(elements) > 10
    assert all(len(e) < 100 + 2 + 40 for e in elements)
    pieces = [json.loads(e) for e in elements]
    empty = '<script type="application/json" id="capture-data">{"calls":' + (
        "[]" if array else "{}"
    )
    assert page_data.data(empty + "}</script>" + out.getvalue())["calls"] == whole
    assert sum(len(p) for p in pieces) == len(members)


def test_nothing_added_writes_no_element() -> None:
    out = io.StringIO()
    Parts(out, "values", array=True).close()
    assert out.getvalue() == ""


def test_an_item_list_names_what_the_agent_s_previous_call_began_with() -> None:
    """Each call's item places after those its agent's previous call (with an item list)
    began with; tags as runs; another agent's calls are not a base."""
    lists = page_json.ItemLists()

    def items(*pairs: tuple[str, int]) -> list[dict[str, Any]]:
        return [{"tag": tag, "ref": ref} for tag, ref in pairs]

    first = lists.of("c1", "a", items(("new", 1), ("new", 2)))
    assert first == {"from": None, "keep": 0, "refs": [1, 2], "tags": [["new", 2]]}
    other = lists.of("c2", "b", items(("new", 1), ("new", 9)))
    assert other == {"from": None, "keep": 0, "refs": [1, 9], "tags": [["new", 2]]}
    grown = lists.of("c3", "a", items(("same", 1), ("same", 2), ("from_output", 5), ("new", 6)))
    assert grown == {
        "from": "c1",
        "keep": 2,
        "refs": [5, 6],
        "tags": [["same", 2], ["from_output", 1], ["new", 1]],
    }
    rewritten = lists.of("c4", "a", items(("same", 1), ("new", 7), ("same", 5)))
    assert rewritten == {
        "from": "c3",
        "keep": 1,
        "refs": [7, 5],
        "tags": [["same", 1], ["new", 1], ["same", 1]],
    }
    assert lists.of("c5", "a", []) == {"from": None, "keep": 0, "refs": [], "tags": []}
    assert lists.of("c6", None, items(("new", 3)))["from"] is None


def test_a_row_names_what_the_row_before_holds_as_same() -> None:
    """A field the row before holds is -1, as is a list field's entry at the same index;
    literal fields are written as they are; page_data reads the rows back whole."""
    changes = page_json.RowChanges(frozenset({1}))
    rows = [
        [0, "rel-1", 2, [[3, 4], 5], 6],
        [0, "rel-2", 2, [[3, 4], 7], 6],
        [0, "rel-2", 8, [[3, 9]], 6],
        [0, "rel-3", 8, [], 1],
    ]
    written = [changes.of(r) for r in rows]
    assert written == [
        [0, "rel-1", 2, [[3, 4], 5], 6],
        [-1, "rel-2", -1, [-1, 7], -1],
        [-1, "rel-2", 8, [[3, 9]], -1],
        [-1, "rel-3", -1, [], 1],
    ]
    page = (
        '<script type="application/json" id="capture-data">'
        + json.dumps(
            {
                "calls": {},
                "order": [],
                "values": [],
                "relations": {
                    "fields": ["a", "relation_id", "b", "evidence", "c"],
                    "literal": ["relation_id"],
                    "nested": {"evidence": ["x", "y"]},
                    "rows": written,
                },
            }
        )
        + "</script>"
    )
    assert page_data.data(page)["relations"]["rows"] == written
    back = page_data.resolved(page.replace('"values": []', f'"values": {list(range(10))}'))

    def shown(row: list[Any]) -> list[Any]:  # places are their own values here
        entries = [dict(zip("xy", e, strict=True)) if isinstance(e, list) else e for e in row[3]]
        return [row[0], row[1], row[2], entries, row[4]]

    fields = ("a", "relation_id", "b", "evidence", "c")
    assert [[r[f] for f in fields] for r in back["relations"]] == [shown(r) for r in rows]

from __future__ import annotations

from roller.identity.evidence import (
    ABSENT,
    Evidence,
    Field,
    HeaderView,
    dig,
    parse_json_object,
)


def test_header_view_is_case_insensitive_and_merges_the_roller_record() -> None:
    view = HeaderView({"X-Session-Id": "a"}, roller={"x-roller-session-id": "r"})
    assert view.raw("x-session-id") == (True, "a", None)
    assert view.raw("x-roller-session-id") == (True, "r", None)
    assert view.raw("x-parent-session-id") == (False, None, None)
    assert view.names() == {"x-session-id", "x-roller-session-id"}


def test_agree_uses_either_source_alone_and_refuses_a_conflict() -> None:
    ev = Evidence(HeaderView(None))
    a, b = Field(True, "x"), Field(True, "y")
    assert ev.agree(("h", a), ("m", ABSENT)) == a
    assert ev.agree(("h", ABSENT), ("m", b)) == b
    assert ev.agree(("h", a), ("m", Field(True, "x"))) == a
    assert ev.agree(("h", a), ("m", b)) == Field(True, None)
    assert ev.rejected == [("m", "conflicts with h")]
    # A rejected copy on one side does not hand the decision to the other.
    assert ev.agree(("h", Field(True, None)), ("m", b)) == Field(True, None)
    assert ev.agree(("h", a), ("m", Field(True, None))) == Field(True, None)


def test_rejections_are_recorded_once() -> None:
    ev = Evidence(HeaderView(None))
    ev.reject("f", "r")
    ev.reject("f", "r")
    assert ev.rejected == [("f", "r")]


def test_parse_json_object_is_total() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object("[]") is None
    assert parse_json_object("{") is None
    assert parse_json_object('{"a":' * 10_000 + "1" + "}" * 10_000) is None  # RecursionError inside
    assert parse_json_object("{}" + " " * 70_000) is None


def test_dig() -> None:
    body = {"a": {"b": {"c": None}}}
    assert dig(body, "a", "b", "c") == (True, None)
    assert dig(body, "a", "x") == (False, None)
    assert dig([1], "a") == (False, None)
    assert dig(None, "a") == (False, None)

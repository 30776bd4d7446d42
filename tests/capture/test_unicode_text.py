"""`roller.capture.unicode_text`: lone surrogates become U+FFFD wherever they sit, nothing
else changes, and an untouched value is the very object given."""

from __future__ import annotations

import json

from roller.capture.tape import RequestMeta, ResponseMeta, TapeExchange
from roller.capture.unicode_text import held, held_exchange


def test_lone_surrogates_are_replaced_anywhere_and_pairs_kept() -> None:
    value = json.loads(
        '{"a\\udc80": ["x \\ud800", {"k": "\\ud83d\\ude00"}], "n": 18446744073709551616}'
    )
    assert held(value) == {"a\ufffd": ["x \ufffd", {"k": "\U0001f600"}], "n": 2**64}
    assert held(("ok", "caf\udce9")) == ("ok", "caf\ufffd")


def test_a_value_with_nothing_to_replace_is_returned_as_is() -> None:
    for value in ({"a": ["b", 1, None, 2.5]}, {"n": 2**70, "s": ["é", "\U0001f600"]}, ()):
        assert held(value) is value


def _exchange(headers: tuple[tuple[str, str], ...], reason: str | None) -> TapeExchange:
    return TapeExchange(
        exchange_id="e1",
        request=RequestMeta(method="POST", path="/v1/messages", headers=headers),
        request_time_ns=1,
        request_body=b"{}",
        response=ResponseMeta(status=200, reason=reason),
        response_time_ns=2,
        chunks=(),
        end=None,
        end_time_ns=None,
    )


def test_an_exchange_says_where_text_was_replaced() -> None:
    clean = _exchange((("x-a", "b"),), "OK")
    assert held_exchange(clean) == (clean, ())
    bad = _exchange((("x-a", "caf\udce9"),), "O\udcffK")
    kept, places = held_exchange(bad)
    assert places == ("request headers", "response reason")
    assert kept.request.headers == (("x-a", "caf\ufffd"),)
    assert kept.response is not None and kept.response.reason == "O\ufffdK"
    assert bad.request.headers == (("x-a", "caf\udce9"),)  # the tape's own value untouched

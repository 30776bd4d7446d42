"""SSEDecoder and encode_event: the WHATWG event-stream rules, and properties over
arbitrary bytes (any split gives the same events; encode → decode is the identity)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire.sse import SSEDecoder, _event, _well_formed, decode_body, encode_event
from roller.wire.types import SSEEvent
from tests.wire.settings import FUZZ


def decode(*chunks: bytes) -> tuple[list[SSEEvent], str | None]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    events += decoder.close()
    return events, decoder.discarded


def datas(*chunks: bytes) -> list[str]:
    return [event.data for event in decode(*chunks)[0]]


# ------------------------------------------------------------ the spec's own examples


def test_spec_stock_example_joins_data_lines() -> None:
    body = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert decode(body)[0] == [SSEEvent(data="YHOO\n+2\n10")]


def test_spec_comment_and_id_example() -> None:
    body = (
        b": test stream\n\n"
        b"data: first event\nid: 1\n\n"
        b"data:second event\nid\n\n"
        b"data:  third event\n\n"
    )
    events, _ = decode(body)
    assert events == [
        SSEEvent(data="first event", id="1"),
        SSEEvent(data="second event"),  # `id` with no value resets the last event id
        SSEEvent(data=" third event"),  # only one space after the colon is dropped
    ]


def test_spec_empty_data_example() -> None:
    # "data\n\ndata\ndata\n\ndata:" → "", "\n"; the last block is never terminated.
    events, discarded = decode(b"data\n\ndata\ndata\n\ndata:")
    assert [e.data for e in events] == ["", "\n"]
    assert discarded == "data: "


def test_spec_space_after_colon_example() -> None:
    assert datas(b"data:test\n\ndata: test\n\n") == ["test", "test"]


# ------------------------------------------------------------ line ends, BOM, encoding


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_end(newline: bytes) -> None:
    body = b"event: a" + newline + b"data: 1" + newline + newline + b"data: 2" + newline * 2
    assert decode(body)[0] == [SSEEvent(data="1", event="a"), SSEEvent(data="2")]


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    # Were the LF read as a second line end, the blank line would dispatch "1" early
    # and the following data line would start a new event.
    assert datas(b"data: 1\r", b"\ndata: 2\r\n\r\n") == ["1\n2"]


def test_cr_at_chunk_end_then_other_text() -> None:
    assert datas(b"data: 1\r", b"data: 2\r\r") == ["1\n2"]


def test_leading_bom_dropped_only_at_start() -> None:
    bom = "\ufeff".encode()
    assert datas(bom + b"data: a\n\n") == ["a"]
    assert datas(bom[:1], bom[1:2], bom[2:] + b"data: a\n\n") == ["a"]
    # A BOM later in the stream is data; a second leading one makes the line a
    # field named "\ufeffdata", which is ignored.
    assert datas(b"data: a" + bom + b"\n\n") == ["a\ufeff"]
    assert datas(bom + bom + b"data: a\n\n") == []


def test_utf8_split_inside_a_character() -> None:
    body = "data: é€😀\n\n".encode()
    for cut in range(len(body) + 1):
        assert datas(body[:cut], body[cut:]) == ["é€😀"], cut


def test_invalid_utf8_becomes_replacement_character() -> None:
    assert datas(b"data: a\xffb\n\n") == ["a\ufffdb"]
    # A sequence cut off by the end of the stream is replaced at close().
    events, discarded = decode(b"data: a\n\ndata: \xe2\x82")
    assert [e.data for e in events] == ["a"]
    assert discarded == "data: \ufffd"


# ------------------------------------------------------------ fields


def test_event_type_id_retry() -> None:
    events, _ = decode(b"event: ping\nid: 7\nretry: 1500\ndata: x\n\ndata: y\n\n")
    # The last event id persists; the event type and retry belong to their own event.
    assert events == [
        SSEEvent(data="x", event="ping", id="7", retry=1500),
        SSEEvent(data="y", id="7"),
    ]


def test_retry_must_be_ascii_digits() -> None:
    events, _ = decode(b"retry: 10a\ndata: x\n\nretry: -5\ndata: y\n\nretry: \xd9\xa1\ndata: z\n\n")
    assert [e.retry for e in events] == [None, None, None]  # "١" is a digit, not ASCII


def test_id_with_nul_is_ignored() -> None:
    events, _ = decode(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert [e.id for e in events] == ["1", "1"]


def test_block_without_data_dispatches_nothing() -> None:
    events, discarded = decode(b"event: lonely\n\nid: 9\n\ndata: x\n\n")
    assert events == [SSEEvent(data="x", id="9")]
    assert discarded is None


def test_unknown_fields_and_field_without_colon() -> None:
    assert datas(b"foo: bar\ndata\nweird\ndata:1\n\n") == ["\n1"]


def test_comments_anywhere() -> None:
    assert datas(b":hi\ndata: a\n: between\ndata: b\n\n:\n\n") == ["a\nb"]


def test_unterminated_event_is_discarded_and_reported() -> None:
    events, discarded = decode(b'event: message_stop\ndata: {"type":"message_stop"}\n')
    assert events == []
    assert discarded == 'event: message_stop\ndata: {"type":"message_stop"}'


def test_feed_after_close_is_an_error() -> None:
    decoder = SSEDecoder()
    decoder.close()
    with pytest.raises(ValueError, match="after close"):
        decoder.feed(b"data: x\n\n")
    assert decoder.close() == []


# ------------------------------------------------------------ encode_event


def test_encode_event_writes_every_field() -> None:
    event = SSEEvent(data="a\nb", event="delta", id="5", retry=10)
    assert encode_event(event) == b"event: delta\nid: 5\nretry: 10\ndata: a\ndata: b\n\n"


@pytest.mark.parametrize(
    "event",
    [
        SSEEvent(data="a\rb"),
        SSEEvent(data="x", event="a\nb"),
        SSEEvent(data="x", id="a\x00"),
        SSEEvent(data="x", id="a\rb"),
        SSEEvent(data="x", retry=-1),
    ],
)
def test_encode_event_refuses_what_the_format_cannot_carry(event: SSEEvent) -> None:
    with pytest.raises(ValueError):
        encode_event(event)


# ------------------------------------------------------------ properties

_field_text = st.text(st.characters(exclude_characters="\r\n\x00", exclude_categories=["Cs"]))
_events = st.builds(
    SSEEvent,
    data=st.text(st.characters(exclude_characters="\r", exclude_categories=["Cs"])),
    event=st.none() | _field_text.filter(bool),
    id=st.none() | _field_text.filter(bool),
    retry=st.none() | st.integers(min_value=0, max_value=10**12),
)


def _split(body: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p for p in points if 0 < p < len(body)})
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


@FUZZ
@given(st.lists(_events, max_size=6), st.lists(st.integers(min_value=0), max_size=10))
def test_encode_then_decode_gives_the_events_back(
    events: list[SSEEvent], points: list[int]
) -> None:
    body = b"".join(encode_event(event) for event in events)
    decoded, discarded = decode(*_split(body, [p % (len(body) + 1) for p in points]))
    expected: list[SSEEvent] = []
    last_id: str | None = None
    for event in events:
        last_id = event.id if event.id is not None else last_id  # ids persist (spec)
        expected.append(SSEEvent(event.data, event.event, last_id, event.retry))
    assert decoded == expected
    assert discarded is None


_sse_bytes = st.lists(
    st.sampled_from(
        [
            b"data",
            b"data:",
            b"data: ",
            b"event:",
            b"id:",
            b"retry:",
            b":",
            b" ",
            b"x",
            b"1",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"\xef\xbb\xbf",
            b"\xe2\x82\xac",
            b"\xff",
            b"\x00",
        ]
    )
    | st.binary(max_size=6),
    max_size=40,
).map(b"".join)


@FUZZ
@given(_sse_bytes, st.lists(st.integers(min_value=0), max_size=12))
def test_any_split_gives_the_same_events(body: bytes, points: list[int]) -> None:
    whole = decode(body)
    pieces = _split(body, [p % (len(body) + 1) for p in points])
    assert decode(*pieces) == whole
    one_byte_at_a_time = [body[i : i + 1] for i in range(len(body))]
    assert decode(*one_byte_at_a_time) == whole


# ------------------------------------------------------------ decode_body's fast path

_server_events = st.builds(
    SSEEvent,
    data=st.text(st.characters(exclude_characters="\r\n", exclude_categories=["Cs"])),
    event=st.none() | _field_text,
)
_almost_server_bodies = st.tuples(
    st.lists(_server_events, max_size=6).map(lambda es: b"".join(map(encode_event, es))),
    _sse_bytes,
    st.integers(min_value=0),
).map(lambda t: t[0][: t[2] % (len(t[0]) + 1)] + t[1] + t[0][t[2] % (len(t[0]) + 1) :])


@FUZZ
@given(
    _sse_bytes
    | _almost_server_bodies
    | st.lists(_server_events).map(lambda es: b"".join(map(encode_event, es)))
)
def test_decode_body_gives_what_the_decoder_gives(body: bytes) -> None:
    assert decode_body(body) == decode(body)


@FUZZ
@given(st.lists(_server_events, max_size=8))
def test_a_body_as_servers_write_it_takes_the_fast_path(events: list[SSEEvent]) -> None:
    body = b"".join(encode_event(event) for event in events)
    assert _well_formed(body) == decode(body)[0]


@pytest.mark.parametrize(
    "body",
    [
        b"data: a\n\ndata: b\n",  # ends inside an event: discarded
        b"data: a\r\n\r\n",
        b"\xef\xbb\xbfdata: a\n\n",
        b"data: \xff\n\n",
        b"event: e\nid: 1\ndata: a\n\n",
        b"data: a\ndata: b\n\n",
        b": comment\ndata: a\n\n",
        b"data:a\n\n",
        b"event: e\n\ndata: a\n\n",
    ],
)
def test_other_bodies_take_the_decoder(body: bytes) -> None:
    assert _well_formed(body) is None
    assert decode_body(body) == decode(body)


@given(st.text(max_size=20), st.none() | st.text(max_size=10))
def test_an_event_made_by_its_slots_is_one_made_by_its_constructor(
    data: str, name: str | None
) -> None:
    made, built = _event(data, name), SSEEvent(data=data, event=name)
    assert made == built
    assert hash(made) == hash(built)
    assert repr(made) == repr(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.data = "changed"  # type: ignore[misc]

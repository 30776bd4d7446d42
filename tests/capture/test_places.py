"""The tape index's packed places: every exchange comes back exactly as it was added."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from roller.capture.tape.places import (
    BODY,
    CHUNK,
    END,
    FIELDS,
    REQ,
    RESP,
    T_IN_HEADER,
    Places,
    pack,
    unpack,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def _writer_shaped(seg: int, at: int, t: int, chunks: int) -> array[int]:
    """Frames as `TapeWriter` lays one exchange out: one after another, each payload
    right after its header line."""
    frames: list[int] = []
    for i, (kind, header, payload) in enumerate(
        [(REQ, 400, 0), (BODY, 66, 78_000), (RESP, 220, 0)]
        + [(CHUNK, 65, 300)] * chunks
        + [(END, 200, 0)]
    ):
        frames += (kind, seg, at, at + header, at + header + 1, at + header + 1 + payload, t + i)
        at += header + payload + 2
    return array("q", frames)


@st.composite
def frames(draw: st.DrawFn) -> array[int]:
    """Frames of any shape: writer-shaped ones, and any integers at all."""
    if draw(st.booleans()):
        seg = draw(st.integers(min_value=0, max_value=2**33))
        at = draw(st.integers(min_value=0, max_value=2**40))
        t = draw(st.integers(min_value=-(2**62), max_value=2**62))
        return _writer_shaped(seg, at, t, draw(st.integers(min_value=0, max_value=40)))
    n = draw(st.integers(min_value=1, max_value=6))
    values = draw(st.lists(INT64, min_size=FIELDS * n, max_size=FIELDS * n))
    values[4::FIELDS] = [min(stop + 1, 2**63 - 1) for stop in values[3::FIELDS]]
    values[3::FIELDS] = [start - 1 for start in values[4::FIELDS]]  # the payload follows
    return array("q", values)


@settings(max_examples=300)
@given(
    exchange_id=st.text(),
    request_time=st.integers() | INT64,
    frames=frames(),
    pad=st.binary(max_size=5),
)
def test_a_packed_exchange_unpacks_to_the_same_frames(
    exchange_id: str, request_time: int, frames: array[int], pad: bytes
) -> None:
    data = pad + pack(exchange_id, request_time, frames)
    ref = unpack(data, len(pad))
    assert (ref.exchange_id, ref.request_time_ns) == (exchange_id, request_time)
    assert ref.frames == frames
    f = frames
    columns = (f[0::7], f[1::7], f[2::7], f[3::7], f[5::7], f[6::7])
    found = (ref.kinds, ref.segments, ref.header_starts, ref.header_stops)
    found += (ref.payload_stops, ref.times)
    assert [list(c) for c in found] == [list(c) for c in columns]


def test_a_writer_shaped_exchange_takes_a_few_bytes_a_frame() -> None:
    frames = _writer_shaped(3, 60_000_000, 1_764_547_200_000_000_000, chunks=5)
    packed = pack("tape-000003:1234", 1_764_547_200_000_000_000, frames)
    assert len(packed) < 12 * len(frames) // FIELDS + 40  # 8 * FIELDS bytes a frame before
    # a time or place that does not fit 64 bits, or frames in two segments: kept exactly
    for odd in (T_IN_HEADER, 2**63 - 1):
        wide = array("q", frames)
        wide[FIELDS + 6] = odd
        assert unpack(pack("x", 5, wide)).frames == wide
    moved = array("q", frames)
    moved[-FIELDS + 1] += 1
    assert unpack(pack("x", 5, moved)).frames == moved


def test_places_give_each_exchange_in_opening_order_also_after_reopening() -> None:
    places = Places()
    a = _writer_shaped(0, 0, 100, chunks=2)
    b = _writer_shaped(0, 10_000_000, 200, chunks=0)
    first = places.open("a", 100, a[:FIELDS])
    second = places.open("b", 200, b[:FIELDS])
    for i in range(FIELDS, len(b), FIELDS):  # b ends first
        places.add(second, b[i : i + FIELDS])
    places.seal(second)
    for i in range(FIELDS, len(a), FIELDS):  # a is never sealed: `refs` does it
        places.add(first, a[i : i + FIELDS])
    late = (6, 0, 20_000_000, 20_000_050, 20_000_051, 20_000_051, 300)  # `ann` after `end`
    places.add(second, late)
    refs = places.refs()
    assert len(refs) == len(places) == 2
    assert [r.exchange_id for r in refs] == ["a", "b"]
    assert refs[0].frames == a
    assert refs[-1].frames == b + array("q", late)
    assert [r.exchange_id for r in refs[1:]] == ["b"]

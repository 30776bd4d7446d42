"""Where each exchange's frames lie, packed: the tape index's entry of one exchange.

An indexed frame is its kind code, segment, header start and stop (the header line's
newline), payload stop and time `t`; its payload starts right after the header line.
`ExchangeRef` holds them as one column each. Kept as Python integers for the whole of
finalize they cost ~1 KB an exchange of nine frames (docs/benchmarks.md, "Finalize at
scale, round 4"); `Places` keeps the frames of an exchange in flight as one `array`
(`FIELDS` integers a frame, as indexing adds them), packs each exchange into one buffer
once its frames are all in (`seal`), and gives its `ExchangeRef` back when asked
(`Refs`, a sequence that unpacks one ref at a time).

Packing, per exchange: its segment, frame count, request time and id, then the
columns — kind code; frame after frame, the header start minus the previous frame's
payload stop (the first frame's: the header start) and the payload stop minus the
header start, interleaved (one running sum gives both back); header line length; `t`
minus the previous frame's `t` (the first frame's: minus the request time) — each at
the narrowest of 1, 2, 4 or 8 bytes that holds all of its values (one `struct` format,
widths found by bit length): ~200 bytes for `finalize_scale.py`'s nine-frame exchange,
where the `array` and the record took ~1 KB. Unpacking is a few C-level steps (running
sums), not a Python loop per frame. Finalize packs each exchange once and unpacks it
twice (its two passes), so both are kept to as few Python steps as they take: ~0.6 of
what round 5's took (docs/benchmarks.md, "Finalize at scale, round 6").
An exchange that does not pack so (its frames in two segments, a value or time beyond
64 bits, an id over 255 bytes) is stored as `marshal` of its frames: exact for any
integer and any string, and rare (an exchange that straddles a segment's end).

Fact relied on: a frame's payload starts right after its header line's newline
(`framing` indexes it so), so the payload start is not kept.
"""

from __future__ import annotations

import marshal
import struct
from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate
from operator import add, sub
from typing import NamedTuple

from roller.capture.lazy_sequence import LazySequence

# As indexing adds a frame: kind code, segment, header start/stop, payload start/stop, t.
FIELDS = 7
# The time of a frame whose `t` does not fit 64 bits (any integer is valid): reading it
# back takes `t` from its header again.
T_IN_HEADER = -(2**63)
REQ, BODY, RESP, CHUNK, END, BREF, ANN = range(7)


class ExchangeRef(NamedTuple):
    """Where one exchange's frames lie, a column per field, the `req` frame first: kind
    code, segment, header start, header stop (its newline: the payload starts after
    it), payload stop, time `t` (`T_IN_HEADER` when it does not fit 64 bits). A named
    tuple: made each time a ref is unpacked, and a tuple is made in one C step."""

    exchange_id: str
    request_time_ns: int
    kinds: Sequence[int]
    segments: Sequence[int]
    header_starts: Sequence[int]
    header_stops: Sequence[int]
    payload_stops: Sequence[int]
    times: Sequence[int]
    number: int = -1  # its place among the tape index's exchanges (`Refs`)

    @property
    def frames(self) -> array[int]:
        """The frames as indexing added them, `FIELDS` integers each (flat)."""
        return _flat(
            self.kinds,
            self.segments,
            self.header_starts,
            self.header_stops,
            [s + 1 for s in self.header_stops],
            self.payload_stops,
            self.times,
        )


def _flat(*columns: Sequence[int]) -> array[int]:
    out = array("q", bytes(8 * FIELDS * len(columns[0])))
    for k, column in enumerate(columns):
        out[k::FIELDS] = array("q", column)
    return out


def of_frames(
    exchange_id: str, request_time_ns: int, frames: array[int], number: int = -1
) -> ExchangeRef:
    """The ref of frames as indexing added them (`FIELDS` integers a frame)."""
    f = frames
    return ExchangeRef(
        exchange_id, request_time_ns, f[0::7], f[1::7], f[2::7], f[3::7], f[5::7], f[6::7], number
    )


# the segment, the frame count, the request time, the id's length, the columns' widths
_HEAD = struct.Struct("<IIqBH")
_MARSHALLED = 0xFFFFFFFF  # in the segment's place: then the data's length, marshal data
_LENGTH = struct.Struct("<I")
_WIDTHS = "BHIQ"  # 1, 2, 4, 8 bytes by width code (the times' column signed: "bhiq")
# The width code of a column by its values' bit length (capped: 65 and 64 stand for any
# more): unsigned, the narrowest holding the largest value (a negative one, or one
# beyond 64 bits, makes `struct` refuse the row: then it is marshalled); signed, of
# max(hi, ~lo), the narrowest holding both ends (4: none does).
_UNSIGNED = bytes(0 if b <= 8 else 1 if b <= 16 else 2 if b <= 32 else 3 for b in range(66))
_SIGNED = bytes(
    0 if b < 8 else 1 if b < 16 else 2 if b < 32 else 3 if b < 64 else 4 for b in range(65)
)


def _format(n: int, code: int) -> struct.Struct:
    """The columns' struct: n values each (gaps and spans interleaved), at their widths."""
    key = n << 10 | code
    found = _FORMATS.get(key)
    if found is None:
        kind, gap, line, span, time = (_WIDTHS[(code >> (2 * k)) & 3] for k in range(5))
        found = struct.Struct(f"<{n}{kind}{(gap + span) * n}{n}{line}{n}{time.lower()}")
        if len(_FORMATS) >= 4096:  # exchanges of many frame counts: start over
            _FORMATS.clear()
        _FORMATS[key] = found
    return found


_FORMATS: dict[int, struct.Struct] = {}


def pack(exchange_id: str, request_time_ns: int, frames: array[int]) -> bytes:
    """An exchange's frames (as indexing added them) packed (module docstring)."""
    f, t0, n = frames, request_time_ns, len(frames) // FIELDS
    if not n:
        return _marshalled(exchange_id, t0, f)
    segments, starts, times = f[1::FIELDS], f[2::FIELDS], f[6::FIELDS]
    ident = exchange_id.encode("utf-8", "surrogatepass")
    if (
        segments.count(segments[0]) != n
        or not 0 <= segments[0] < _MARSHALLED
        or T_IN_HEADER in times
        or not -(2**63) <= t0 < 2**63
        or len(ident) > 0xFF
    ):
        return _marshalled(exchange_id, t0, f)
    marks = [0] * (2 * n)  # header start, payload stop, frame after frame
    marks[0::2] = starts
    marks[1::2] = f[5::FIELDS]
    steps = list(map(sub, marks, [0, *marks[:-1]]))  # gap, span, gap, span, ...
    kinds, lines = f[0::FIELDS], list(map(sub, f[3::FIELDS], starts))
    deltas = list(map(sub, times, [t0, *times[:-1]]))
    hi, lo = max(deltas), min(deltas)
    time = _SIGNED[min(max(hi, ~lo).bit_length(), 64)]
    if time > 3:
        return _marshalled(exchange_id, t0, f)
    u = _UNSIGNED
    code = u[min(max(kinds).bit_length(), 65)] | u[min(max(steps[0::2]).bit_length(), 65)] << 2
    code |= u[min(max(lines).bit_length(), 65)] << 4 | time << 8
    code |= u[min(max(steps[1::2]).bit_length(), 65)] << 6
    try:
        body = _format(n, code).pack(*kinds, *steps, *lines, *deltas)
    except struct.error:  # a value beyond 64 bits, or negative where none can be
        return _marshalled(exchange_id, t0, f)
    return _HEAD.pack(segments[0], n, t0, len(ident), code) + ident + body


def _marshalled(exchange_id: str, t0: int, frames: array[int]) -> bytes:
    data = marshal.dumps((exchange_id, t0, frames.tolist()))
    return _LENGTH.pack(_MARSHALLED) + _LENGTH.pack(len(data)) + data


def unpack(data: bytes | bytearray, at: int = 0, number: int = -1) -> ExchangeRef:
    """The `ExchangeRef` packed at offset `at` of `data` (exchange `number`)."""
    (seg,) = _LENGTH.unpack_from(data, at)
    if seg == _MARSHALLED:
        (size,) = _LENGTH.unpack_from(data, at + _LENGTH.size)
        start = at + 2 * _LENGTH.size
        x, t, frames = marshal.loads(data[start : start + size])
        return of_frames(x, t, array("q", frames), number)
    seg, n, t0, idlen, code = _HEAD.unpack_from(data, at)
    pos = at + _HEAD.size
    x = data[pos : pos + idlen].decode("utf-8", "surrogatepass")
    values = _format(n, code).unpack_from(data, pos + idlen)
    marks = list(accumulate(values[n : 3 * n]))  # header start, payload stop, ...
    starts = marks[0::2]
    times = list(accumulate(values[4 * n :], initial=t0))
    del times[0]  # the request time
    stops = list(map(add, starts, values[3 * n : 4 * n]))
    return ExchangeRef(x, t0, values[:n], (seg,) * n, starts, stops, marks[1::2], times, number)


class Places:
    """Every exchange's frames while a tape is indexed: in flight as an `array`, packed
    into one buffer once sealed (`seal`). Exchanges are numbered in the order `open`
    saw them; a frame added to a sealed exchange (an `ann` frame after its `end`)
    reopens it."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._offsets = array("q")  # per exchange: where it is packed; -1 in flight
        self._open: dict[int, tuple[str, int, array[int]]] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def open(self, exchange_id: str, request_time_ns: int, frame: Sequence[int]) -> int:
        """A new exchange whose first frame is `frame`: its number."""
        number = len(self._offsets)
        self._offsets.append(-1)
        self._open[number] = (exchange_id, request_time_ns, array("q", frame))
        return number

    def add(self, number: int, frame: Sequence[int]) -> None:
        """A frame (`FIELDS` integers) added to exchange `number`."""
        flight = self._open.get(number)
        if flight is None:  # sealed already: reopened
            ref = unpack(self._buffer, self._offsets[number])
            flight = self._open[number] = (ref.exchange_id, ref.request_time_ns, ref.frames)
            self._offsets[number] = -1
        flight[2].extend(frame)

    def seal(self, number: int) -> None:
        """Pack exchange `number` (no frame of it is expected any more)."""
        flight = self._open.pop(number, None)
        if flight is not None:
            self._offsets[number] = len(self._buffer)
            self._buffer += pack(*flight)

    def refs(self) -> Refs:
        """Every exchange's ref, in number order; seals those still in flight."""
        for number in list(self._open):
            self.seal(number)
        return Refs(self._buffer, self._offsets)


class Refs(LazySequence[ExchangeRef]):
    """The exchanges' refs, unpacked when asked (one at a time: a few µs each)."""

    __slots__ = ("_data", "_offsets")

    def __init__(self, data: bytearray, offsets: array[int]) -> None:
        self._data = data
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def _make(self, number: int) -> ExchangeRef:
        return unpack(self._data, self._offsets[number], number)

    def __iter__(self) -> Iterator[ExchangeRef]:
        data = self._data
        for number, offset in enumerate(self._offsets):
            yield unpack(data, offset, number)

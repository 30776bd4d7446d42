"""The tape's framing, read once: where each exchange's frames lie, and the problems.

`Framing.segment(number, name, data)` walks one segment's frames (header line, `n`
payload bytes, `\\n`) and records, per exchange, each frame's place as `FIELDS`
integers (`Framing.result()` gives them as `ExchangeRef`s, in `req` order) and every
framing problem, in tape order. The rules are `roller.capture.tape.reader`'s (its
docstring): a torn or corrupt frame ends its segment, a frame that makes no sense is
reported and skipped. Each problem is kept with its frame's place (`Place`), so that
the one problem found later — a known meta key of the wrong shape, found when the
reader types the meta it loads (`TapeIndex`), not typed here a first time — goes where
it would have been reported. An `end` frame's `response_bytes` is read here (the chunk
bytes are checked against it). A frame's time `t` is kept with its place, so reading an
exchange back parses only the headers that carry a meta. An exchange's places are
packed once its `end` frame is in (`roller.capture.tape.places`: a few bytes a frame);
while indexing, each exchange costs its id in a dict besides, for the frames that name
it.

A `body` or `chunk` header as `TapeWriter` writes it (`{"k":…,"x":…,"t":…,"n":…}`, an
ASCII id with no quote or backslash, integers of at most 19 digits, no leading zero) is
read by one regular expression (`_DATA_HEADER`) in a segment of the current version:
exactly the object and checks the JSON path gives (tests/capture/test_tape.py
compares the two paths' indexes and problems).
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Sequence

from roller.capture import exact_json
from roller.capture.tape import compat
from roller.capture.tape.format import (
    AFTER_END_KINDS,
    FIRST_VERSION,
    FRAME_KINDS,
    META_KINDS,
    TAPE_VERSION,
    JSONObject,
)
from roller.capture.tape.meta import EndMeta, SegmentHeader
from roller.capture.tape.places import (
    ANN,
    BODY,
    BREF,
    CHUNK,
    END,
    FIELDS,
    REQ,
    RESP,
    T_IN_HEADER,
    ExchangeRef,
    Places,
)

__all__ = ["FIELDS", "T_IN_HEADER", "ExchangeRef", "Framing", "Place"]


_KIND_CODES = {
    "req": REQ,
    "body": BODY,
    "resp": RESP,
    "chunk": CHUNK,
    "end": END,
    "bref": BREF,
    "ann": ANN,
}
# per exchange, while indexing
_RESPONDED, _ENDED = 1, 2
Place = tuple[int, int, int]  # segment, byte, then 0 (framing) or 1 (a meta's shape)
# A whole segment's bytes: read (`read_tape`, tests) or mapped (`index_tape`).
Segment = bytes | bytearray | mmap.mmap


_DATA_HEADER = re.compile(
    rb'\{"k":"(body|chunk)","x":"([ !#-\[\]-~]*)",'
    rb'"t":(-?(?:0|[1-9][0-9]{0,18})),"n":(0|[1-9][0-9]{0,18})\}'
)


class _FrameError(Exception):
    """A frame whose framing cannot be trusted: the rest of its segment is unreadable."""


def _parse_header(line: bytes) -> JSONObject:
    try:
        header = exact_json.loads(line)
    except ValueError as exc:
        raise _FrameError(f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _FrameError("header is not a JSON object")
    n, t, kind = header.get("n"), header.get("t"), header.get("k")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _FrameError("header has no valid length 'n'")
    if not isinstance(t, int) or isinstance(t, bool):
        raise _FrameError("header has no valid time 't'")
    if not isinstance(kind, str):
        raise _FrameError("header has no kind 'k'")
    return header


class Framing:
    """The framing pass over a tape's segments, oldest first (module docstring)."""

    def __init__(self) -> None:
        self.places = Places()  # each exchange's frames, packed once it ended
        self._numbers: dict[str, int] = {}  # exchange id -> its number (req order)
        self._flags = bytearray()  # per exchange: _RESPONDED | _ENDED
        self._chunk_bytes: dict[int, int] = {}  # per exchange not ended yet
        self._mismatched: list[tuple[int, str]] = []  # chunk bytes against the end frame
        # the problems in tape order, each with its frame's place (segment, byte, 0): a
        # meta's shape is checked when the exchange is loaded, its problems put in place
        self.problems: list[tuple[Place, str]] = []
        self._at = (0, -1)  # the frame being read
        self.versions: dict[int, int] = {}  # segment -> the tape version of its frames

    def _report(self, message: str) -> None:
        self.problems.append(((*self._at, 0), message))

    def result(self) -> tuple[Sequence[ExchangeRef], list[tuple[Place, str]], list[str]]:
        """The refs, the framing problems (with their places), then the chunk byte counts
        that do not match their end frames (in exchange order)."""
        mismatched = [message for _, message in sorted(self._mismatched)]
        self._mismatched.clear()
        self._numbers.clear()  # the ids live on in the packed refs
        return self.places.refs(), self.problems, mismatched

    def segment(self, number: int, name: str, data: Segment) -> None:
        pos = 0
        size = len(data)
        version: int | None = None  # of this segment's frames, from its `seg` frame
        while pos < size:
            self._at = (number, pos)
            newline = data.find(b"\n", pos)
            if newline < 0:
                self._report(f"{name}: torn frame at byte {pos} (header line incomplete)")
                return
            fast = _DATA_HEADER.fullmatch(data, pos, newline) if version == TAPE_VERSION else None
            if fast is not None:
                pos = self._data_frame(fast, name, data, (number, pos, newline))
                if pos < 0:
                    return
                continue
            try:
                header = _parse_header(bytes(data[pos:newline]))
            except _FrameError as exc:
                self._report(f"{name}: corrupt frame at byte {pos}: {exc}")
                return
            start = newline + 1
            stop = start + int(header["n"])
            if stop + 1 > size:
                self._report(f"{name}: torn frame at byte {pos} (payload incomplete)")
                return
            if data[stop : stop + 1] != b"\n":
                self._report(f"{name}: corrupt frame at byte {pos} (no terminator after payload)")
                return
            if version is None:
                if header["k"] != "seg":
                    self._report(f"{name}: does not start with a segment header")
                    return
                version = SegmentHeader.from_json(header).version
                if version is None or not compat.readable(version):
                    self._report(f"{name}: unsupported tape version {header.get('v')!r}")
                    return
                self.versions[number] = version
            elif version < FIRST_VERSION.get(header["k"], version):
                self._report(
                    f"{name} byte {pos}: {header['k']} frame in a version {version} segment"
                )
            else:
                where = f"{name} byte {pos}"
                try:
                    header = compat.upgrade(header, version)
                except (LookupError, TypeError, ValueError) as exc:  # compat's converter contract
                    self._report(f"{where}: cannot convert from tape version {version}: {exc}")
                else:
                    self._apply(where, header, (number, pos, newline, start, stop))
            pos = stop + 1

    def _data_frame(
        self, header: re.Match[bytes], name: str, data: Segment, at: tuple[int, int, int]
    ) -> int:
        """A `body` or `chunk` frame whose header `_DATA_HEADER` read: what `segment` and
        `_apply` do with it, without the JSON. The next frame's position (-1: the rest of
        the segment is unreadable)."""
        number, pos, newline = at
        start = newline + 1
        stop = start + int(header[4])
        if stop + 1 > len(data):
            self._report(f"{name}: torn frame at byte {pos} (payload incomplete)")
            return -1
        if data[stop : stop + 1] != b"\n":
            self._report(f"{name}: corrupt frame at byte {pos} (no terminator after payload)")
            return -1
        kind, x = header[1].decode("ascii"), header[2].decode("ascii")
        n = self._numbers.get(x)
        if n is None:
            self._report(f"{name} byte {pos}: {kind} frame for unknown exchange {x}")
        elif self._flags[n] & _ENDED:
            self._report(f"{name} byte {pos}: {kind} frame after the end of exchange {x}")
        else:
            t = int(header[3])
            t = t if T_IN_HEADER < t < 2**63 else T_IN_HEADER
            self.places.add(n, (_KIND_CODES[kind], number, pos, newline, start, stop, t))
            if kind == "chunk":
                self._chunk_bytes[n] += stop - start
        return stop + 1

    def _apply(self, where: str, header: JSONObject, place: tuple[int, int, int, int, int]) -> None:
        kind: str = header["k"]
        x = header.get("x")
        t: int = header["t"]
        meta = header.get("meta")
        if kind not in FRAME_KINDS or kind == "seg":
            self._report(f"{where}: unexpected frame kind {kind!r}")
            return
        if not isinstance(x, str):
            self._report(f"{where}: {kind} frame without an exchange id")
            return
        if kind in META_KINDS:
            if not isinstance(meta, dict):
                self._report(f"{where}: {kind} frame of {x} has no meta object")
                return
            if place[4] > place[3]:
                self._report(f"{where}: {kind} frame of {x} carries payload bytes")
        frame = (_KIND_CODES[kind], *place, t if T_IN_HEADER < t < 2**63 else T_IN_HEADER)
        if kind == "req":
            if x in self._numbers:
                self._report(f"{where}: second req frame for exchange {x}")
                return
            opened = self._numbers[x] = self.places.open(x, t, frame)
            self._flags.append(0)
            self._chunk_bytes[opened] = 0
            return
        n = self._numbers.get(x)
        if n is None:
            self._report(f"{where}: {kind} frame for unknown exchange {x}")
        elif self._flags[n] & _ENDED and kind not in AFTER_END_KINDS:
            self._report(f"{where}: {kind} frame after the end of exchange {x}")
        elif kind == "resp" and self._flags[n] & _RESPONDED:
            self._report(f"{where}: second resp frame for exchange {x}")
        else:
            self.places.add(n, frame)
            if kind == "chunk":
                self._chunk_bytes[n] += place[4] - place[3]
            elif kind == "resp":
                self._flags[n] |= _RESPONDED
            elif kind == "end":
                assert isinstance(meta, dict)
                self._ended(n, x, EndMeta.response_bytes_of(meta))

    def _ended(self, n: int, x: str, stated: int | None) -> None:
        """Exchange n's `end` frame is in: no chunk may follow, so its frames are packed
        and its chunk bytes checked against what the end frame states."""
        self._flags[n] |= _ENDED
        chunk_bytes = self._chunk_bytes.pop(n)
        if stated is not None and chunk_bytes != stated:
            message = f"chunk frames hold {chunk_bytes} bytes, its end frame says {stated}"
            self._mismatched.append((n, f"exchange {x}: {message}"))
        self.places.seal(n)

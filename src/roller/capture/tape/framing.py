"""The tape's framing, read once: where each exchange's frames lie, and the problems.

`Framing.segment(number, name, data)` walks one segment's frames (header line, `n`
payload bytes, `\\n`) and records, per exchange, each frame's place as `FIELDS`
integers (`Framing.result()` gives them as `ExchangeRef`s, in `req` order) and every
framing problem, in tape order. The rules are `roller.capture.tape.reader`'s (its
docstring): a torn or corrupt frame ends its segment, a frame that makes no sense is
reported and skipped, the metas are typed here to report a known key of the wrong
shape. A frame's time `t` is kept with its place, so reading an exchange back parses
only the headers that carry a meta. An exchange's places are packed once its `end`
frame is in (`roller.capture.tape.places`: a few bytes a frame); while indexing, each
exchange costs its id in a dict besides, for the frames that name it.

A `body` or `chunk` header as `TapeWriter` writes it (`{"k":…,"x":…,"t":…,"n":…}`, an
ASCII id with no quote or backslash, integers of at most 19 digits, no leading zero) is
read by one regular expression (`_DATA_HEADER`) in a segment of the current version:
exactly the object and checks the JSON path gives (tests/capture/test_tape.py
compares the two paths' indexes and problems).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

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
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta, SegmentHeader
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

__all__ = ["FIELDS", "T_IN_HEADER", "ExchangeRef", "Framing"]

_Meta = TypeVar("_Meta", RequestMeta, ResponseMeta, EndMeta)


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
        self.problems: list[str] = []
        self.versions: dict[int, int] = {}  # segment -> the tape version of its frames

    def result(self) -> tuple[Sequence[ExchangeRef], tuple[str, ...]]:
        self.problems += [message for _, message in sorted(self._mismatched)]
        self._mismatched.clear()
        self._numbers.clear()  # the ids live on in the packed refs
        return self.places.refs(), tuple(self.problems)

    def segment(self, number: int, name: str, data: bytes | bytearray) -> None:
        pos = 0
        size = len(data)
        version: int | None = None  # of this segment's frames, from its `seg` frame
        while pos < size:
            newline = data.find(b"\n", pos)
            if newline < 0:
                self.problems.append(f"{name}: torn frame at byte {pos} (header line incomplete)")
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
                self.problems.append(f"{name}: corrupt frame at byte {pos}: {exc}")
                return
            start = newline + 1
            stop = start + int(header["n"])
            if stop + 1 > size:
                self.problems.append(f"{name}: torn frame at byte {pos} (payload incomplete)")
                return
            if data[stop : stop + 1] != b"\n":
                self.problems.append(
                    f"{name}: corrupt frame at byte {pos} (no terminator after payload)"
                )
                return
            if version is None:
                if header["k"] != "seg":
                    self.problems.append(f"{name}: does not start with a segment header")
                    return
                version = SegmentHeader.from_json(header).version
                if version is None or not compat.readable(version):
                    self.problems.append(f"{name}: unsupported tape version {header.get('v')!r}")
                    return
                self.versions[number] = version
            elif version < FIRST_VERSION.get(header["k"], version):
                self.problems.append(
                    f"{name} byte {pos}: {header['k']} frame in a version {version} segment"
                )
            else:
                where = f"{name} byte {pos}"
                try:
                    header = compat.upgrade(header, version)
                except (LookupError, TypeError, ValueError) as exc:  # compat's converter contract
                    self.problems.append(
                        f"{where}: cannot convert from tape version {version}: {exc}"
                    )
                else:
                    self._apply(where, header, (number, pos, newline, start, stop))
            pos = stop + 1

    def _data_frame(
        self, header: re.Match[bytes], name: str, data: bytes | bytearray, at: tuple[int, int, int]
    ) -> int:
        """A `body` or `chunk` frame whose header `_DATA_HEADER` read: what `segment` and
        `_apply` do with it, without the JSON. The next frame's position (-1: the rest of
        the segment is unreadable)."""
        number, pos, newline = at
        start = newline + 1
        stop = start + int(header[4])
        if stop + 1 > len(data):
            self.problems.append(f"{name}: torn frame at byte {pos} (payload incomplete)")
            return -1
        if data[stop : stop + 1] != b"\n":
            self.problems.append(
                f"{name}: corrupt frame at byte {pos} (no terminator after payload)"
            )
            return -1
        kind, x = header[1].decode("ascii"), header[2].decode("ascii")
        n = self._numbers.get(x)
        if n is None:
            self.problems.append(f"{name} byte {pos}: {kind} frame for unknown exchange {x}")
        elif self._flags[n] & _ENDED:
            self.problems.append(f"{name} byte {pos}: {kind} frame after the end of exchange {x}")
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
            self.problems.append(f"{where}: unexpected frame kind {kind!r}")
            return
        if not isinstance(x, str):
            self.problems.append(f"{where}: {kind} frame without an exchange id")
            return
        if kind in META_KINDS:
            if not isinstance(meta, dict):
                self.problems.append(f"{where}: {kind} frame of {x} has no meta object")
                return
            if place[4] > place[3]:
                self.problems.append(f"{where}: {kind} frame of {x} carries payload bytes")
        frame = (_KIND_CODES[kind], *place, t if T_IN_HEADER < t < 2**63 else T_IN_HEADER)
        if kind == "req":
            if x in self._numbers:
                self.problems.append(f"{where}: second req frame for exchange {x}")
                return
            assert isinstance(meta, dict)
            self._typed(where, x, RequestMeta.from_json(meta))
            opened = self._numbers[x] = self.places.open(x, t, frame)
            self._flags.append(0)
            self._chunk_bytes[opened] = 0
            return
        n = self._numbers.get(x)
        if n is None:
            self.problems.append(f"{where}: {kind} frame for unknown exchange {x}")
        elif self._flags[n] & _ENDED and kind not in AFTER_END_KINDS:
            self.problems.append(f"{where}: {kind} frame after the end of exchange {x}")
        elif kind == "resp" and self._flags[n] & _RESPONDED:
            self.problems.append(f"{where}: second resp frame for exchange {x}")
        else:
            self.places.add(n, frame)
            if kind == "chunk":
                self._chunk_bytes[n] += place[4] - place[3]
            elif kind == "resp":
                assert isinstance(meta, dict)
                self._typed(where, x, ResponseMeta.from_json(meta))
                self._flags[n] |= _RESPONDED
            elif kind == "end":
                assert isinstance(meta, dict)
                self._ended(n, x, self._typed(where, x, EndMeta.from_json(meta)))

    def _ended(self, n: int, x: str, end: EndMeta) -> None:
        """Exchange n's `end` frame is in: no chunk may follow, so its frames are packed
        and its chunk bytes checked against what the end frame states."""
        self._flags[n] |= _ENDED
        chunk_bytes = self._chunk_bytes.pop(n)
        stated = end.response_bytes
        if stated is not None and chunk_bytes != stated:
            message = f"chunk frames hold {chunk_bytes} bytes, its end frame says {stated}"
            self._mismatched.append((n, f"exchange {x}: {message}"))
        self.places.seal(n)

    def _typed(self, where: str, x: str, meta: _Meta) -> _Meta:
        """`meta`, after reporting the known keys it had to keep as read (wrong shape)."""
        for key in meta.invalid:
            self.problems.append(f"{where}: meta of {x}: {key!r} has an unexpected shape (kept)")
        return meta

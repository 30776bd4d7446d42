"""Reading a tape directory back into exchanges.

Rules this module keeps:
- Never raises for damaged content. A torn or corrupt frame ends its segment (its framing
  can no longer be trusted) and becomes a string in `TapeReadResult.problems`; frames that
  are well framed but make no sense (unknown exchange, second `req`) are reported and
  skipped.
- Returns only complete frames: a frame counts when its header line, all `n` payload
  bytes and the closing `\\n` are present.
- An exchange without an `end` frame is returned with `end=None`: it was in flight when
  the tape stopped (a crash or kill -9 of the writer).
- When an `end` frame states `response_bytes`, the chunk frames must add up to it;
  otherwise a problem names the exchange (a chunk write was lost).
- Metas come out typed (`RequestMeta`, `ResponseMeta`, `EndMeta`). A segment of an older
  tape version is converted frame by frame first (`compat`); a known meta key whose value
  has the wrong shape is reported and kept, as read, in the record's `extra`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from roller.capture.tape import compat
from roller.capture.tape.format import FRAME_KINDS, META_KINDS, JSONObject, list_segments
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta, SegmentHeader

_Meta = TypeVar("_Meta", RequestMeta, ResponseMeta, EndMeta)


@dataclass(frozen=True, slots=True)
class TapeExchange:
    """One exchange as the tape holds it.

    `request` is the `req` frame's meta; `response` the `resp` frame's meta (None when no
    upstream response head arrived); `end` the `end` frame's meta (None when the tape
    stopped while the exchange was in flight). Times are wall-clock nanoseconds.
    """

    exchange_id: str
    request: RequestMeta
    request_time_ns: int
    request_body: bytes
    response: ResponseMeta | None
    response_time_ns: int | None
    chunks: tuple[tuple[int, bytes], ...]
    end: EndMeta | None
    end_time_ns: int | None

    @property
    def body(self) -> bytes:
        """The response body bytes as received from the upstream (all chunks joined)."""
        return b"".join(data for _, data in self.chunks)

    @property
    def outcome(self) -> str | None:
        """`end.meta.outcome`, or None while in flight."""
        return None if self.end is None else self.end.outcome


@dataclass(frozen=True, slots=True)
class TapeReadResult:
    exchanges: tuple[TapeExchange, ...]
    problems: tuple[str, ...]
    segments: tuple[str, ...] = ()

    def by_id(self) -> dict[str, TapeExchange]:
        return {ex.exchange_id: ex for ex in self.exchanges}


def read_tape(directory: Path | str) -> TapeReadResult:
    """Read every segment of a tape directory, oldest first.

    A missing directory reads as an empty tape with one problem. Exchanges are ordered by
    their `req` frame (segment order, then position in the segment).
    """
    root = Path(directory)
    if not root.is_dir():
        return TapeReadResult((), (f"{root}: not a tape directory",))
    reader = _Reader()
    names: list[str] = []
    for _, path in list_segments(root):
        names.append(path.name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            reader.problems.append(f"{path.name}: unreadable: {exc}")
            continue
        reader.segment(path.name, data)
    return reader.result(tuple(names))


@dataclass
class _Builder:
    exchange_id: str
    request: RequestMeta
    request_time_ns: int
    body: list[bytes] = field(default_factory=list)
    response: ResponseMeta | None = None
    response_time_ns: int | None = None
    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    end: EndMeta | None = None
    end_time_ns: int | None = None

    def freeze(self) -> TapeExchange:
        return TapeExchange(
            exchange_id=self.exchange_id,
            request=self.request,
            request_time_ns=self.request_time_ns,
            request_body=b"".join(self.body),
            response=self.response,
            response_time_ns=self.response_time_ns,
            chunks=tuple(self.chunks),
            end=self.end,
            end_time_ns=self.end_time_ns,
        )


class _FrameError(Exception):
    """A frame whose framing cannot be trusted: the rest of its segment is unreadable."""


def _parse_header(line: bytes) -> JSONObject:
    try:
        header = json.loads(line)
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


class _Reader:
    def __init__(self) -> None:
        self.builders: dict[str, _Builder] = {}
        self.order: list[str] = []
        self.problems: list[str] = []

    def result(self, segments: tuple[str, ...]) -> TapeReadResult:
        for x in self.order:
            b = self.builders[x]
            stated = None if b.end is None else b.end.response_bytes
            if stated is not None:
                got = sum(len(d) for _, d in b.chunks)
                if got != stated:
                    self.problems.append(
                        f"exchange {x}: chunk frames hold {got} bytes, its end frame says {stated}"
                    )
        exchanges = tuple(self.builders[x].freeze() for x in self.order)
        return TapeReadResult(exchanges, tuple(self.problems), segments)

    def segment(self, name: str, data: bytes) -> None:
        pos = 0
        size = len(data)
        version: int | None = None  # of this segment's frames, from its `seg` frame
        while pos < size:
            newline = data.find(b"\n", pos)
            if newline < 0:
                self.problems.append(f"{name}: torn frame at byte {pos} (header line incomplete)")
                return
            try:
                header = _parse_header(data[pos:newline])
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
            else:
                where = f"{name} byte {pos}"
                try:
                    header = compat.upgrade(header, version)
                except (LookupError, TypeError, ValueError) as exc:  # compat's converter contract
                    self.problems.append(
                        f"{where}: cannot convert from tape version {version}: {exc}"
                    )
                else:
                    self._apply(where, header, data[start:stop])
            pos = stop + 1

    def _apply(self, where: str, header: JSONObject, payload: bytes) -> None:
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
            if payload:
                self.problems.append(f"{where}: {kind} frame of {x} carries payload bytes")
        if kind == "req":
            if x in self.builders:
                self.problems.append(f"{where}: second req frame for exchange {x}")
                return
            assert isinstance(meta, dict)
            self.builders[x] = _Builder(x, self._typed(where, x, RequestMeta.from_json(meta)), t)
            self.order.append(x)
            return
        builder = self.builders.get(x)
        if builder is None:
            self.problems.append(f"{where}: {kind} frame for unknown exchange {x}")
        elif builder.end is not None:
            self.problems.append(f"{where}: {kind} frame after the end of exchange {x}")
        elif kind == "body":
            builder.body.append(payload)
        elif kind == "chunk":
            builder.chunks.append((t, payload))
        elif kind == "resp":
            if builder.response is not None:
                self.problems.append(f"{where}: second resp frame for exchange {x}")
                return
            assert isinstance(meta, dict)
            builder.response = self._typed(where, x, ResponseMeta.from_json(meta))
            builder.response_time_ns = t
        else:  # end
            assert isinstance(meta, dict)
            builder.end, builder.end_time_ns = self._typed(where, x, EndMeta.from_json(meta)), t

    def _typed(self, where: str, x: str, meta: _Meta) -> _Meta:
        """`meta`, after reporting the known keys it had to keep as read (wrong shape)."""
        for key in meta.invalid:
            self.problems.append(f"{where}: meta of {x}: {key!r} has an unexpected shape (kept)")
        return meta

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
"""

from __future__ import annotations

import json
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.capture.tape.format import (
    FRAME_KINDS,
    META_KINDS,
    READABLE_VERSIONS,
    REF_VERSION,
    BodyRef,
    JSONObject,
    Resolver,
    list_segments,
)


@dataclass(frozen=True, slots=True)
class TapeExchange:
    """One exchange as the tape holds it.

    `request` is the `req` frame's meta; `response` the `resp` frame's meta (None when no
    upstream response head arrived); `end` the `end` frame's meta (None when the tape
    stopped while the exchange was in flight). Times are wall-clock nanoseconds.
    """

    exchange_id: str
    request: JSONObject
    request_time_ns: int
    request_body: bytes
    response: JSONObject | None
    response_time_ns: int | None
    chunks: tuple[tuple[int, bytes], ...]
    end: JSONObject | None
    end_time_ns: int | None

    @property
    def body(self) -> bytes:
        """The response body bytes as received from the upstream (all chunks joined)."""
        return b"".join(data for _, data in self.chunks)

    @property
    def outcome(self) -> str | None:
        """`end.meta.outcome`, or None while in flight."""
        if self.end is None:
            return None
        outcome = self.end.get("outcome")
        return outcome if isinstance(outcome, str) else None


@dataclass(frozen=True, slots=True)
class TapeReadResult:
    exchanges: tuple[TapeExchange, ...]
    problems: tuple[str, ...]
    segments: tuple[str, ...] = ()

    def by_id(self) -> dict[str, TapeExchange]:
        return {ex.exchange_id: ex for ex in self.exchanges}


def read_tape(directory: Path | str, resolve: Resolver | None = None) -> TapeReadResult:
    """Read every segment of a tape directory, oldest first, into memory.

    A missing directory reads as an empty tape with one problem. Exchanges are ordered by
    their `req` frame (segment order, then position in the segment).
    """
    with index_tape(directory, keep_data=True, resolve=resolve) as index:
        exchanges = tuple(index.load(ref) for ref in index.exchanges)
        return TapeReadResult(exchanges, index.problems, index.segments)


@dataclass(frozen=True, slots=True)
class ExchangeRef:
    """Where one exchange's frames lie: enough to load it, small enough to keep many.

    `frames` is flat: per frame `kind code, segment, header start, header stop, payload
    start, payload stop` (codes in `_KIND_CODES`); the `req` frame comes first.
    """

    exchange_id: str
    request_time_ns: int
    frames: array[int]  # 8 bytes an entry, not a Python int each


class TapeIndex:
    """A tape read once for its framing: exchanges as `ExchangeRef`s, bodies left on disk.

    `load(ref)` reads one exchange's frames back (the same `TapeExchange` `read_tape`
    gives), `request_body(ref)` only its request body. Memory is one segment while
    indexing, then a few integers per frame. Use it as a context manager (it keeps the
    segment files open).
    """

    def __init__(
        self,
        names: tuple[str, ...],
        sources: list[Path],
        exchanges: tuple[ExchangeRef, ...],
        problems: tuple[str, ...],
        data: dict[int, bytes] | None,
        resolve: Resolver | None = None,
    ) -> None:
        self.segments = names
        self.exchanges = exchanges
        self._problems = list(problems)
        self._paths = sources
        self._data = data
        self._fds: dict[int, int] = {}
        self._resolve = resolve
        self._unresolved: set[str] = set()

    @property
    def problems(self) -> tuple[str, ...]:
        """The framing problems, and each body reference that did not resolve so far."""
        return tuple(self._problems)

    def __enter__(self) -> TapeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _read(self, segment: int, start: int, stop: int) -> bytes:
        if self._data is not None:
            return self._data[segment][start:stop]
        fd = self._fds.get(segment)
        if fd is None:
            fd = self._fds[segment] = os.open(self._paths[segment], os.O_RDONLY)
        return os.pread(fd, stop - start, start)

    def request_body(self, ref: ExchangeRef) -> bytes:
        f = ref.frames
        return b"".join(
            self._read(f[i + 1], f[i + 4], f[i + 5])
            if f[i] == _BODY
            else self._referenced(ref.exchange_id, f, i)
            for i in range(0, len(f), _FIELDS)
            if f[i] in (_BODY, _BREF)
        )

    def referenced(self, ref: ExchangeRef) -> bool:
        """Whether the exchange's request body is a `bref` frame (stored in the capture)."""
        f = ref.frames
        return any(f[i] == _BREF for i in range(0, len(f), _FIELDS))

    def _referenced(self, exchange_id: str, f: array[int], i: int) -> bytes:
        """The body a `bref` frame names, rebuilt from the capture and checked against its
        sha256 and length; empty (and a problem, once) when it cannot be."""
        meta = BodyRef.from_meta(self._meta(f, i))
        body = self._resolve(meta) if self._resolve is not None and meta is not None else None
        if body is not None and meta is not None and meta.matches(body):
            return body
        if exchange_id not in self._unresolved:
            self._unresolved.add(exchange_id)
            why = "no capture to resolve it from" if self._resolve is None else "unresolved"
            self._problems.append(f"exchange {exchange_id}: body reference {why}")
        return b""

    def load(self, ref: ExchangeRef) -> TapeExchange:
        f = ref.frames
        b = _Builder(ref.exchange_id, self._meta(f, 0), ref.request_time_ns)
        for i in range(_FIELDS, len(f), _FIELDS):
            code, seg = f[i], f[i + 1]
            if code == _BODY:
                b.body.append(self._read(seg, f[i + 4], f[i + 5]))
            elif code == _BREF:
                b.body.append(self._referenced(ref.exchange_id, f, i))
            elif code == _CHUNK:
                header = json.loads(self._read(seg, f[i + 2], f[i + 3]))
                b.chunks.append((header["t"], self._read(seg, f[i + 4], f[i + 5])))
            else:
                header = json.loads(self._read(seg, f[i + 2], f[i + 3]))
                if code == _RESP:
                    b.response, b.response_time_ns = header["meta"], header["t"]
                else:
                    b.end, b.end_time_ns = header["meta"], header["t"]
        return b.freeze()

    def _meta(self, f: array[int], i: int) -> JSONObject:
        meta: JSONObject = json.loads(self._read(f[i + 1], f[i + 2], f[i + 3]))["meta"]
        return meta


def index_tape(
    directory: Path | str, *, keep_data: bool = False, resolve: Resolver | None = None
) -> TapeIndex:
    """Index every segment of a tape directory, oldest first (see `TapeIndex`).

    The same framing rules and problems as `read_tape`; `keep_data` keeps the segments
    in memory (what `read_tape` does) instead of reading frames back from disk.
    `resolve` gives the body a `bref` frame names (`roller.capture.body_refs`).
    """
    root = Path(directory)
    if not root.is_dir():
        return TapeIndex((), [], (), (f"{root}: not a tape directory",), None)
    reader = _Reader()
    names: list[str] = []
    paths: list[Path] = []
    kept: dict[int, bytes] | None = {} if keep_data else None
    for _, path in list_segments(root):
        names.append(path.name)
        paths.append(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            reader.problems.append(f"{path.name}: unreadable: {exc}")
            continue
        reader.segment(len(paths) - 1, path.name, data)
        if kept is not None:
            kept[len(paths) - 1] = data
    exchanges, problems = reader.result()
    return TapeIndex(tuple(names), paths, exchanges, problems, kept, resolve)


# An indexed frame: kind code, segment, header start/stop, payload start/stop.
_FIELDS = 6
_REQ, _BODY, _RESP, _CHUNK, _END, _BREF = range(6)
_KIND_CODES = {
    "req": _REQ,
    "body": _BODY,
    "resp": _RESP,
    "chunk": _CHUNK,
    "end": _END,
    "bref": _BREF,
}


@dataclass
class _Builder:
    exchange_id: str
    request: JSONObject
    request_time_ns: int
    body: list[bytes] = field(default_factory=list)
    response: JSONObject | None = None
    response_time_ns: int | None = None
    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    end: JSONObject | None = None
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


@dataclass
class _Spans:
    """An exchange being indexed: its frames' places and what the checks need."""

    request_time_ns: int
    frames: list[int]
    has_response: bool = False
    ended: bool = False
    response_bytes: object = None
    chunk_bytes: int = 0


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
        self.spans: dict[str, _Spans] = {}
        self.order: list[str] = []
        self.problems: list[str] = []

    def result(self) -> tuple[tuple[ExchangeRef, ...], tuple[str, ...]]:
        for x in self.order:
            s = self.spans[x]
            stated = s.response_bytes
            if s.ended and isinstance(stated, int) and s.chunk_bytes != stated:
                self.problems.append(
                    f"exchange {x}: chunk frames hold {s.chunk_bytes} bytes, "
                    f"its end frame says {stated}"
                )
        refs = tuple(
            ExchangeRef(x, self.spans[x].request_time_ns, array("q", self.spans[x].frames))
            for x in self.order
        )
        return refs, tuple(self.problems)

    def segment(self, number: int, name: str, data: bytes) -> None:
        pos = 0
        size = len(data)
        first = True
        version: Any = None
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
            if first:
                first = False
                if header["k"] != "seg":
                    self.problems.append(f"{name}: does not start with a segment header")
                    return
                version = header.get("v")
                if version not in READABLE_VERSIONS:
                    self.problems.append(f"{name}: unsupported tape version {version!r}")
                    return
            elif header["k"] == "bref" and version < REF_VERSION:
                self.problems.append(
                    f"{name} byte {pos}: bref frame in a version {version} segment"
                )
            else:
                place = (number, pos, newline, start, stop)
                self._apply(f"{name} byte {pos}", header, place)
            pos = stop + 1

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
        frame = [_KIND_CODES[kind], *place]
        if kind == "req":
            if x in self.spans:
                self.problems.append(f"{where}: second req frame for exchange {x}")
                return
            self.spans[x] = _Spans(t, frame)
            self.order.append(x)
            return
        spans = self.spans.get(x)
        if spans is None:
            self.problems.append(f"{where}: {kind} frame for unknown exchange {x}")
        elif spans.ended:
            self.problems.append(f"{where}: {kind} frame after the end of exchange {x}")
        elif kind == "resp" and spans.has_response:
            self.problems.append(f"{where}: second resp frame for exchange {x}")
        else:
            spans.frames += frame
            if kind == "chunk":
                spans.chunk_bytes += place[4] - place[3]
            elif kind == "resp":
                spans.has_response = True
            elif kind == "end":
                assert isinstance(meta, dict)
                spans.ended, spans.response_bytes = True, meta.get("response_bytes")

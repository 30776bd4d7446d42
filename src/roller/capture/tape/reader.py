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
- A `bref` frame (tape version 2) is a request body stored in the capture: resolved when
  loaded, through the resolver the caller gives, and accepted only when its length and
  sha256 match (`roller.capture.body_refs`).
- A request body is the concatenation of its `body` (and `bref`) frames: several when it
  was written as it was read, none when it was never read (a request refused on its
  head). An `ann` frame (tape version 3) adds annotations to an exchange, also after its
  `end` frame: its keys replace the request's annotations of the same name, in tape
  order, so `TapeExchange.request` holds them as the exchange's last `ann` frame left
  them. A frame kind newer than its segment's version (`FIRST_VERSION`) is a problem.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from roller.capture import exact_json
from roller.capture.tape import compat
from roller.capture.tape.format import (
    AFTER_END_KINDS,
    FIRST_VERSION,
    FRAME_KINDS,
    META_KINDS,
    BodyRef,
    JSONObject,
    Resolver,
    list_segments,
)
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


def read_tape(
    directory: Path | str, resolve: Resolver | None = None, *, from_segment: int = 0
) -> TapeReadResult:
    """Read every segment of a tape directory, oldest first, into memory (with
    `from_segment`, only the segments numbered from it on: one writer's, whose exchanges
    never span another's).

    A missing directory reads as an empty tape with one problem. Exchanges are ordered by
    their `req` frame (segment order, then position in the segment).
    """
    with index_tape(directory, keep_data=True, resolve=resolve, from_segment=from_segment) as index:
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
        versions: dict[int, int] | None = None,
    ) -> None:
        self.segments = names
        self._versions = versions or {}
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
        meta = BodyRef.from_meta(self._header(f, i).get("meta") or {})
        body = self._resolve(meta) if self._resolve is not None and meta is not None else None
        if body is not None and meta is not None and meta.matches(body):
            return body
        if exchange_id not in self._unresolved:
            self._unresolved.add(exchange_id)
            why = (
                "no published capture to read it from"
                if self._resolve is None
                else "the published capture (calls.jsonl or contexts/) no longer holds it "
                "as recorded (absent, or its sha256 or length differs)"
            )
            self._problems.append(
                f"exchange {exchange_id}: its request body was stored once, in the capture "
                f"(a body reference on the tape), and cannot be rebuilt: {why}"
            )
        return b""

    def load(self, ref: ExchangeRef) -> TapeExchange:
        f = ref.frames
        request = RequestMeta.from_json(self._header(f, 0)["meta"])
        b = _Builder(ref.exchange_id, request, ref.request_time_ns)
        for i in range(_FIELDS, len(f), _FIELDS):
            code, seg = f[i], f[i + 1]
            if code == _BODY:
                b.body.append(self._read(seg, f[i + 4], f[i + 5]))
            elif code == _BREF:
                b.body.append(self._referenced(ref.exchange_id, f, i))
            elif code == _CHUNK:
                header = self._header(f, i)
                b.chunks.append((header["t"], self._read(seg, f[i + 4], f[i + 5])))
            elif code == _ANN:
                b.annotated = {**(b.annotated or {}), **self._header(f, i)["meta"]}
            else:
                header = self._header(f, i)
                if code == _RESP:
                    b.response = ResponseMeta.from_json(header["meta"])
                    b.response_time_ns = header["t"]
                else:
                    b.end, b.end_time_ns = EndMeta.from_json(header["meta"]), header["t"]
        return b.freeze()

    def _header(self, f: array[int], i: int) -> JSONObject:
        """Frame i's header, read again and converted as indexing converted it."""
        seg = f[i + 1]
        header: JSONObject = exact_json.loads(self._read(seg, f[i + 2], f[i + 3]))
        return compat.upgrade(header, self._versions.get(seg, 1))


def index_tape(
    directory: Path | str,
    *,
    keep_data: bool = False,
    resolve: Resolver | None = None,
    from_segment: int = 0,
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
    for number, path in list_segments(root):
        if number < from_segment:
            continue
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
    return TapeIndex(tuple(names), paths, exchanges, problems, kept, resolve, reader.versions)


# An indexed frame: kind code, segment, header start/stop, payload start/stop.
_FIELDS = 6
_REQ, _BODY, _RESP, _CHUNK, _END, _BREF, _ANN = range(7)
_KIND_CODES = {
    "req": _REQ,
    "body": _BODY,
    "resp": _RESP,
    "chunk": _CHUNK,
    "end": _END,
    "bref": _BREF,
    "ann": _ANN,
}


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
    annotated: dict[str, object] | None = None  # what `ann` frames added, in order

    def freeze(self) -> TapeExchange:
        request = self.request
        if self.annotated is not None:
            request = request._replace(annotations={**request.annotations, **self.annotated})
        return TapeExchange(
            exchange_id=self.exchange_id,
            request=request,
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
    response_bytes: int | None = None
    chunk_bytes: int = 0


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


class _Reader:
    def __init__(self) -> None:
        self.spans: dict[str, _Spans] = {}
        self.order: list[str] = []
        self.problems: list[str] = []
        self.versions: dict[int, int] = {}  # segment -> the tape version of its frames

    def result(self) -> tuple[tuple[ExchangeRef, ...], tuple[str, ...]]:
        for x in self.order:
            s = self.spans[x]
            stated = s.response_bytes
            if s.ended and stated is not None and s.chunk_bytes != stated:
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
            assert isinstance(meta, dict)
            self._typed(where, x, RequestMeta.from_json(meta))
            self.spans[x] = _Spans(t, frame)
            self.order.append(x)
            return
        spans = self.spans.get(x)
        if spans is None:
            self.problems.append(f"{where}: {kind} frame for unknown exchange {x}")
        elif spans.ended and kind not in AFTER_END_KINDS:
            self.problems.append(f"{where}: {kind} frame after the end of exchange {x}")
        elif kind == "resp" and spans.has_response:
            self.problems.append(f"{where}: second resp frame for exchange {x}")
        else:
            spans.frames += frame
            if kind == "chunk":
                spans.chunk_bytes += place[4] - place[3]
            elif kind == "resp":
                assert isinstance(meta, dict)
                self._typed(where, x, ResponseMeta.from_json(meta))
                spans.has_response = True
            elif kind == "end":
                assert isinstance(meta, dict)
                end = self._typed(where, x, EndMeta.from_json(meta))
                spans.ended, spans.response_bytes = True, end.response_bytes

    def _typed(self, where: str, x: str, meta: _Meta) -> _Meta:
        """`meta`, after reporting the known keys it had to keep as read (wrong shape)."""
        for key in meta.invalid:
            self.problems.append(f"{where}: meta of {x}: {key!r} has an unexpected shape (kept)")
        return meta

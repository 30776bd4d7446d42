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

import mmap
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.capture import exact_json
from roller.capture.tape import compat
from roller.capture.tape.format import BodyRef, JSONObject, Resolver, list_segments
from roller.capture.tape.framing import Framing, Place
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta
from roller.capture.tape.places import (
    ANN,
    BODY,
    BREF,
    CHUNK,
    END,
    REQ,
    RESP,
    T_IN_HEADER,
    ExchangeRef,
)
from roller.capture.tape.problems import TapeProblems

# the metas typed when an exchange is loaded, and where `_typed_metas` gives each
_TYPED: dict[int, type[RequestMeta] | type[ResponseMeta] | type[EndMeta]] = {
    REQ: RequestMeta,
    RESP: ResponseMeta,
    END: EndMeta,
}
_SLOT = {REQ: 0, RESP: 1, END: 2}

__all__ = [
    "ExchangeRef",
    "TapeExchange",
    "TapeIndex",
    "TapeReadResult",
    "TapeSource",
    "index_tape",
    "read_tape",
]


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
class TapeSource:
    """What another process needs to load a tape index's exchanges (`TapeIndex.source`,
    `TapeIndex.reopen`): its segments' names, paths and tape versions, and its refs.
    Plain values: pickled as they are."""

    names: tuple[str, ...]
    paths: tuple[Path, ...]
    versions: dict[int, int]
    refs: Sequence[ExchangeRef]


class TapeIndex:
    """A tape read once for its framing: exchanges as `ExchangeRef`s, bodies left on disk.

    `load(ref)` reads one exchange's frames back (the same `TapeExchange` `read_tape`
    gives), `request_body(ref)` only its request body. Memory is one segment while
    indexing, then a few bytes per frame (`places`: each ref unpacked when asked). Use
    it as a context manager (it keeps the segment files open).
    """

    def __init__(
        self,
        names: tuple[str, ...],
        sources: list[Path],
        exchanges: Sequence[ExchangeRef],
        problems: TapeProblems,
        data: dict[int, bytes] | None,
        resolve: Resolver | None = None,
        versions: dict[int, int] | None = None,
    ) -> None:
        self.segments = names
        self._versions = versions or {}
        self.exchanges = exchanges
        self._problems = problems
        self._paths = sources
        self._data = data
        self._fds: dict[int, int] = {}
        self._resolve = resolve
        self._unresolved: set[str] = set()

    @property
    def problems(self) -> tuple[str, ...]:
        """The framing problems (the metas of exchanges not loaded yet are typed now),
        and each body reference that did not resolve so far (`problems`)."""
        for number in self._problems.unchecked():
            self._typed_metas(self.exchanges[number])
        return self._problems.all()

    def _shapes(self, ref: ExchangeRef, j: int, keys: tuple[str, ...]) -> list[tuple[Place, str]]:
        seg, pos = ref.segments[j], ref.header_starts[j]
        where = f"{self.segments[seg]} byte {pos}: meta of {ref.exchange_id}"
        return [((seg, pos, 1), f"{where}: {key!r} has an unexpected shape (kept)") for key in keys]

    def _typed_metas(self, ref: ExchangeRef) -> tuple[Any, ...]:
        """The exchange's `req`, `resp` and `end` metas typed (None where it has none);
        the first time, a known key of the wrong shape is reported in its frame's place."""
        metas: list[Any] = [None, None, None]
        found: list[tuple[Place, str]] = []
        for j, kind in enumerate(ref.kinds):
            record = _TYPED.get(kind)
            if record is not None:
                meta = metas[_SLOT[kind]] = record.from_json(self._header(ref, j)["meta"])
                if meta.invalid:
                    found += self._shapes(ref, j, meta.invalid)
        if not self._problems.checked(ref.number):
            self._problems.shapes(ref.number, found)
        return tuple(metas)

    def source(self) -> TapeSource:
        """This index as another process reopens it (its exchanges loaded from disk)."""
        return TapeSource(self.segments, tuple(self._paths), dict(self._versions), self.exchanges)

    @classmethod
    def reopen(cls, source: TapeSource, resolve: Resolver | None = None) -> TapeIndex:
        """An index over `source`'s segments and refs, reading them from disk: `load`
        gives what the index it came from gives; its problems are its own (the framing's
        stay with that index)."""
        problems = TapeProblems([], [], len(source.refs))
        return cls(
            source.names, list(source.paths), source.refs, problems, None, resolve, source.versions
        )

    def shape_problems(self) -> list[tuple[Place, str]]:
        """The shape problems of the metas this index typed so far (a worker's report)."""
        return self._problems.found_shapes()

    def checked_elsewhere(self, numbers: range, found: list[tuple[Place, str]]) -> None:
        """Exchanges `numbers` were loaded by an index `reopen`ed from this one, whose
        `shape_problems` were `found`: they count as checked here (`problems` does not
        type their metas again)."""
        self._problems.adopt(numbers, found)

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
        return b"".join(
            self._read(seg, stop + 1, end) if kind == BODY else self._referenced(ref, j)
            for j, (kind, seg, stop, end) in enumerate(
                zip(ref.kinds, ref.segments, ref.header_stops, ref.payload_stops, strict=True)
            )
            if kind in (BODY, BREF)
        )

    def referenced(self, ref: ExchangeRef) -> bool:
        """Whether the exchange's request body is a `bref` frame (stored in the capture)."""
        return BREF in ref.kinds

    def _referenced(self, ref: ExchangeRef, j: int) -> bytes:
        """The body frame j (a `bref` frame) names, rebuilt from the capture and checked
        against its sha256 and length; empty (and a problem, once) when it cannot be."""
        meta = BodyRef.from_meta(self._header(ref, j).get("meta") or {})
        body = self._resolve(meta) if self._resolve is not None and meta is not None else None
        if body is not None and meta is not None and meta.matches(body):
            return body
        exchange_id = ref.exchange_id
        if exchange_id not in self._unresolved:
            self._unresolved.add(exchange_id)
            why = (
                "no published capture to read it from"
                if self._resolve is None
                else "the published capture (calls.jsonl or contexts/) no longer holds it "
                "as recorded (absent, or its sha256 or length differs)"
            )
            self._problems.late(
                f"exchange {exchange_id}: its request body was stored once, in the capture "
                f"(a body reference on the tape), and cannot be rebuilt: {why}"
            )
        return b""

    def load(self, ref: ExchangeRef) -> TapeExchange:
        request, response, end = self._typed_metas(ref)
        b = _Builder(ref.exchange_id, request, ref.request_time_ns, response=response, end=end)
        places = zip(ref.kinds, ref.segments, ref.header_stops, ref.payload_stops, strict=True)
        for j, (code, seg, stop, last) in enumerate(places):
            if code == BODY:
                b.body.append(self._read(seg, stop + 1, last))
            elif code == CHUNK:
                b.chunks.append((self._time(ref, j), self._read(seg, stop + 1, last)))
            elif code == BREF:
                b.body.append(self._referenced(ref, j))
            elif code == ANN:
                b.annotated = {**(b.annotated or {}), **self._header(ref, j)["meta"]}
            elif code == RESP:
                b.response_time_ns = self._time(ref, j)
            elif code == END:
                b.end_time_ns = self._time(ref, j)
        return b.freeze()

    def _time(self, ref: ExchangeRef, j: int) -> int:
        """Frame j's time `t`, as indexing kept it (from its header when it could not)."""
        t = ref.times[j]
        return t if t != T_IN_HEADER else int(self._header(ref, j)["t"])

    def _header(self, ref: ExchangeRef, j: int) -> JSONObject:
        """Frame j's header, read again and converted as indexing converted it."""
        seg = ref.segments[j]
        header: JSONObject = exact_json.loads(
            self._read(seg, ref.header_starts[j], ref.header_stops[j])
        )
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
        problems = TapeProblems([((0, -1, 0), f"{root}: not a tape directory")], [], 0)
        return TapeIndex((), [], (), problems, None)
    reader = Framing()
    names: list[str] = []
    paths: list[Path] = []
    kept: dict[int, bytes] | None = {} if keep_data else None
    for number, path in list_segments(root):
        if number < from_segment:
            continue
        names.append(path.name)
        paths.append(path)
        try:
            with _segment_bytes(path, keep_data) as data:
                reader.segment(len(paths) - 1, path.name, data)
                if kept is not None:
                    kept[len(paths) - 1] = bytes(data)
        except OSError as exc:
            reader.problems.append(((len(paths) - 1, -1, 0), f"{path.name}: unreadable: {exc}"))
    exchanges, framing, mismatched = reader.result()
    problems = TapeProblems(framing, mismatched, len(exchanges))
    return TapeIndex(tuple(names), paths, exchanges, problems, kept, resolve, reader.versions)


@contextmanager
def _segment_bytes(path: Path, keep: bool) -> Iterator[bytes | mmap.mmap]:
    """The whole segment: mapped (read in place from the page cache: no copy, no buffer
    to fault in; 0.24 -> 0.17 s of framing for a 150 MB tape), or read when `keep` or
    where the file cannot be mapped (a file system without mmap). A tape is only ever
    appended to, so the mapped length stays readable."""
    if keep:
        yield path.read_bytes()
        return
    with open(path, "rb") as fh:
        try:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
            mapped = None
        if mapped is None:
            yield fh.read()
            return
        with mapped:
            yield mapped


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

"""Appending frames to a tape directory: the proxy's hot path.

Rules this module keeps:
- Append only. A writer never reopens an existing segment: it creates a new one with
  `O_EXCL` (numbers only grow), so a torn tail left by a crash is never written after,
  and exchange ids (`<segment stem>:<seq>`) stay unique within the directory even across
  restarts and concurrent writers.
- A kill -9 loses at most the frames not yet handed to the kernel: every frame is one
  `os.writev` on an `O_APPEND` fd, issued synchronously by the caller. `fsync` (which only
  guards against power loss) runs off the hot path, in a timer thread and at close.
- Every frame is formatted from a bytes template (`frames`: no JSON library for its
  fixed keys, no lock), with the exchange id's bytes made once at `begin`; only a meta
  goes through `dumps_header`, and the common `end` frame not even that. Each frame
  method does its own lookups and formatting in place (the proxy calls three per
  exchange; every Python call saved is measured in `benchmarks/proxy_instructions.py`).
- A meta is a typed record (`RequestMeta`, `ResponseMeta`, `EndMeta`: what the proxy
  writes) or its JSON form as a mapping (tests, tools): both are written as JSON.
- Writing never raises for I/O failures: they are kept in `TapeWriter.errors` and the
  writer moves to a fresh segment, so one torn frame never hides the frames after it.
- Segments rotate at `segment_max_bytes`: a few large files, never a file per exchange
  (a file create costs ~75x an append on the machines measured).
- A request body may be written in parts, as it is read (`request(..., body=parts)`,
  `request_body`): one `body` frame per part, so no body is held whole for the tape.
- A response head may carry the body bytes that came with it (`response(..., first=)`):
  its `chunk` frame goes out in the same `writev`, after the `resp` frame.
- `annotate` adds an `ann` frame to an exchange this writer began, also after its `end`
  (an end hook that failed says so on the exchange's own record).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roller.capture.tape.format import (
    SEGMENT_SUFFIX,
    TAPE_VERSION,
    dumps_header,
    list_segments,
    segment_name,
)
from roller.capture.tape.frames import (
    DATA_HEAD,
    END_FRAME,
    END_OK_FRAME,
    META_HEADER,
    PLAIN_OUTCOMES,
    REQ_FRAME,
    RESP_FRAME,
    TYPED,
    body_frames,
    encode_meta,
)
from roller.capture.tape.meta import EndMeta, RequestMeta, ResponseMeta, SegmentHeader, TapeMeta
from roller.errors import RollerError

DEFAULT_SEGMENT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_FSYNC_INTERVAL = 1.0
_IOV_MAX = 1024


class TapeOpenError(RollerError):
    """The tape directory cannot be created or its first segment cannot be opened."""


class TapeWriter:
    """Appends frames to a tape directory. Not thread-safe: call it from one thread (the
    proxy's event loop); only the internal fsync thread runs beside it.

    `begin()` allocates an exchange id; frames for an id not begun (or already ended)
    raise `ValueError`, a programming error rather than an I/O condition.
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES,
        fsync_interval: float | None = DEFAULT_FSYNC_INTERVAL,
    ) -> None:
        if segment_max_bytes <= 0:
            raise ValueError("segment_max_bytes must be positive")
        self.directory = Path(directory)
        self.segment_max_bytes = segment_max_bytes
        self.errors: list[str] = []
        self._closed = False
        # Open exchanges: id -> the prefixes of its `body` and `chunk` frame headers up to
        # `"t":`, and the id's bytes (for the meta frames' templates).
        self._open: dict[str, tuple[bytes, bytes, bytes]] = {}
        self._begun: dict[str, int] = {}  # segment stem -> the last seq begun in it
        self._seq = 0
        self._fd = -1
        self._size = 0
        self._stem = ""
        self._next_number = 1
        self._lock = threading.Lock()  # guards _fd swaps and _retired against the fsync thread
        self._retired: list[int] = []
        self._written = 0  # bytes handed to the kernel, ever
        self._synced = 0
        self._dir_dirty = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._next_number = max((n for n, _ in list_segments(self.directory)), default=0) + 1
            self._open_segment()
        except OSError as exc:
            raise TapeOpenError(f"cannot open a tape in {self.directory}: {exc}") from exc
        if fsync_interval is not None:
            self._thread = threading.Thread(
                target=self._fsync_loop,
                args=(fsync_interval,),
                name="roller-tape-fsync",
                daemon=True,
            )
            self._thread.start()

    # -- public frame API -------------------------------------------------------------

    @property
    def segment(self) -> Path:
        """The segment currently appended to."""
        return self.directory / f"{self._stem}{SEGMENT_SUFFIX}"

    @property
    def open_exchanges(self) -> list[str]:
        return list(self._open)

    def begin(self) -> str:
        """Allocate a new exchange id, unique within the directory."""
        if self._closed:
            raise ValueError("tape writer is closed")
        seq = self._seq = self._seq + 1
        stem = self._stem
        self._begun[stem] = seq
        exchange_id = f"{stem}:{seq}"
        xb = exchange_id.encode("ascii")
        self._open[exchange_id] = (
            b'{"k":"body","x":"%b","t":' % xb,
            b'{"k":"chunk","x":"%b","t":' % xb,
            xb,
        )
        return exchange_id

    def request(
        self,
        exchange_id: str,
        meta: RequestMeta | Mapping[str, Any],
        *,
        t: int | None = None,
        body: bytes | Sequence[bytes] | None = None,
    ) -> None:
        """The `req` frame; with `body`, its `body` frames right after it in the same
        `writev` (one syscall where the proxy has both, and never one without the other):
        one frame for bytes (empty ones included), one per part for a sequence of parts."""
        prefixes = self._open.get(exchange_id) or self._prefixes(exchange_id)
        # (`encode_meta`, in place: a call fewer per frame)
        encoded = dumps_header(meta.to_json() if isinstance(meta, TYPED) else meta)
        frames = [REQ_FRAME % (prefixes[2], time.time_ns() if t is None else t, encoded)]
        if body is not None:
            if isinstance(body, bytes):
                body = (body,)
            if len(body) == 1:  # the common case: the body arrived in one part
                part = body[0]  # (its frame is stamped when written, as every body frame)
                head = DATA_HEAD % (prefixes[0], time.time_ns(), len(part))
                frames += (head, part, b"\n")
                self._append(frames, len(frames[0]) + len(head) + len(part) + 1)
                return
            body_frames(frames, prefixes[0], body)
        self._append(frames)

    def request_body(
        self, exchange_id: str, data: bytes | Sequence[bytes], *, t: int | None = None
    ) -> None:
        """More of the request body: one `body` frame for bytes, one per part otherwise."""
        frames: list[bytes] = []
        parts = (data,) if isinstance(data, bytes) else data
        body_frames(frames, self._prefixes(exchange_id)[0], parts, t)
        if frames:
            self._append(frames)

    def annotate(
        self, exchange_id: str, annotations: Mapping[str, Any], *, t: int | None = None
    ) -> None:
        """An `ann` frame: annotations added to an exchange this writer began, before or
        after its `end` (readers merge them into the request's, key by key)."""
        stem, _, seq = exchange_id.rpartition(":")
        if not seq.isdigit() or not 0 < int(seq) <= self._begun.get(stem, 0):
            raise ValueError(f"exchange {exchange_id!r} was not begun on this tape")
        self._append([self._meta_header("ann", exchange_id, annotations, t), b"\n"])

    def response(
        self,
        exchange_id: str,
        meta: ResponseMeta | Mapping[str, Any],
        *,
        t: int | None = None,
        first: bytes = b"",
    ) -> None:
        """The `resp` frame; with `first` (body bytes that came with the head), their
        `chunk` frame right after it in the same `writev`."""
        prefixes = self._open.get(exchange_id) or self._prefixes(exchange_id)
        # (`encode_meta`, in place: a call fewer per frame)
        encoded = dumps_header(meta.to_json() if isinstance(meta, TYPED) else meta)
        frame = RESP_FRAME % (prefixes[2], time.time_ns() if t is None else t, encoded)
        if first:
            head = DATA_HEAD % (prefixes[1], time.time_ns(), len(first))
            self._append([frame, head, first, b"\n"], len(frame) + len(head) + len(first) + 1)
        else:
            self._append([frame], len(frame))

    def chunk(self, exchange_id: str, data: bytes) -> None:
        """Record response bytes exactly as received. The hot path: one template, one writev."""
        try:
            prefix = self._open[exchange_id][1]
        except KeyError:
            raise ValueError(f"exchange {exchange_id!r} is not open on this tape") from None
        head = DATA_HEAD % (prefix, time.time_ns(), len(data))
        self._append([head, data, b"\n"], len(head) + len(data) + 1)

    def end(
        self, exchange_id: str, meta: EndMeta | Mapping[str, Any], *, t: int | None = None
    ) -> None:
        xb = (self._open.get(exchange_id) or self._prefixes(exchange_id))[2]
        now = time.time_ns() if t is None else t
        if type(meta) is EndMeta:
            # The common ending (no error, no answer of roller's, every count an int) from
            # one template: the bytes orjson gives for its JSON form, without building it
            # (a test checks the two on arbitrary metas). The writer unpacks the record
            # it encodes, as `to_json` does; a field added to EndMeta fails right here.
            outcome, error, client, upstream, request, response, relayed, body, extra = meta
            if (
                error is None
                and body is None
                and not extra
                and outcome in PLAIN_OUTCOMES  # ASCII words: nothing to escape
                and type(client) is int  # (not bool: %d would give 1 for true)
                and type(upstream) is int
                and type(request) is int
                and type(response) is int
                and type(relayed) is int
            ):
                frame = END_OK_FRAME % (
                    xb, now, outcome.encode(), client, upstream, request, response, relayed
                )  # fmt: skip
                self._append([frame], len(frame))
                del self._open[exchange_id]
                return
        encoded = dumps_header(meta.to_json() if isinstance(meta, TYPED) else meta)
        frame = END_FRAME % (xb, now, encoded)
        self._append([frame], len(frame))
        del self._open[exchange_id]

    def sync(self) -> None:
        """fsync everything written so far (the timer does this on its own)."""
        self._sync_once()

    def close(self) -> None:
        """Stop the fsync timer, fsync and close every segment. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sync_once()
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError as exc:
                self.errors.append(f"closing {self.segment.name} failed: {exc}")

    def __enter__(self) -> TapeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------

    def _prefixes(self, exchange_id: str) -> tuple[bytes, bytes, bytes]:
        try:
            return self._open[exchange_id]
        except KeyError:
            raise ValueError(f"exchange {exchange_id!r} is not open on this tape") from None

    @staticmethod
    def _meta_header(
        kind: str, exchange_id: str, meta: TapeMeta | Mapping[str, Any], t: int | None
    ) -> bytes:
        """`{"k":…,"x":…,"t":…,"n":0,"meta":…}` and its newline: the fixed keys from a
        template (kinds and exchange ids are plain ASCII: nothing to escape), the meta
        through `dumps_header` — the bytes `dumps_header` gives for the whole header. (The
        frame methods inline this per kind, `REQ_FRAME`...: a test checks both.)"""
        now = time.time_ns() if t is None else t
        return META_HEADER % (kind.encode(), exchange_id.encode(), now, encode_meta(meta))

    def _append(self, parts: list[bytes], total: int = -1) -> None:
        """Hand whole frames to the kernel in one `writev` (a short write is finished);
        `total`, their length, when the caller knows it (-1: summed here)."""
        if self._closed:
            raise ValueError("tape writer is closed")
        if self._size >= self.segment_max_bytes or self._fd < 0:
            self._rotate()
            if self._fd < 0:
                return  # the failure is already in self.errors
        if total < 0:
            if len(parts) > _IOV_MAX:  # writev takes at most IOV_MAX buffers (1024 on Linux)
                parts = [b"".join(parts)]
            total = sum(map(len, parts))
        try:
            done = os.writev(self._fd, parts)
            while done < total:  # a short write to a regular file: disk full or a signal
                done += os.write(self._fd, b"".join(parts)[done:])
        except OSError as exc:
            self.errors.append(f"{self._stem}: write failed at byte {self._size}: {exc}")
            # The segment may now end in a torn frame; never append after it.
            self._size = self.segment_max_bytes
            return
        self._size += total
        self._written += total

    def _open_segment(self) -> None:
        header_time = time.time_ns()
        while True:
            number = self._next_number
            self._next_number += 1
            path = self.directory / segment_name(number)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue  # another writer took this number; numbers only grow
            break
        head = dumps_header(SegmentHeader(TAPE_VERSION, header_time, os.getpid()).to_json())
        os.write(fd, head + b"\n\n")
        with self._lock:
            old, self._fd = self._fd, fd
            if old >= 0:
                self._retired.append(old)
            self._dir_dirty = True
        self._stem = path.name[: -len(SEGMENT_SUFFIX)]
        self._seq = 0
        self._size = len(head) + 2
        self._written += self._size
        if self._thread is None and old >= 0:
            self._sync_once()

    def _rotate(self) -> None:
        # Ids of exchanges already begun keep their old stem; only new ids use the new one.
        try:
            self._open_segment()
        except OSError as exc:
            self.errors.append(f"cannot open a new tape segment in {self.directory}: {exc}")
            with self._lock:
                old, self._fd = self._fd, -1
                if old >= 0:
                    self._retired.append(old)

    def _fsync_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._sync_once()

    def _sync_once(self) -> None:
        with self._lock:
            fd = self._fd
            retired, self._retired = self._retired, []
            dir_dirty, self._dir_dirty = self._dir_dirty, False
            written = self._written
        # Only this method closes retired fds, so `fd` cannot be closed under us.
        for old in retired:
            self._guard("fsync of a finished segment", os.fsync, old)
            self._guard("close of a finished segment", os.close, old)
        if fd >= 0 and written != self._synced and self._guard("fsync", os.fsync, fd):
            self._synced = written
        if dir_dirty:
            self._guard("fsync of the tape directory", _fsync_dir, self.directory)

    def _guard(self, what: str, op: Callable[[Any], None], arg: Any) -> bool:
        try:
            op(arg)
        except OSError as exc:
            self.errors.append(f"{what} in {self.directory} failed: {exc}")
            return False
        return True


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)

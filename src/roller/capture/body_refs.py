"""Retained raw material that stores each request body once: the tape's `bref` frames.

Seed 000, "Files and boundaries": an event's body_ref references the context of the
corresponding call in calls.jsonl, and the request body is not stored a second time.
With raw/ retained, publication rewrites the tape (`rewrite_tape`): each exchange whose
request body the published capture gives back exactly has its `body` frame replaced by
a `bref` frame (`BodyRef`: the call id, its line in calls.jsonl, sha256 and length), in
a segment marked tape version 2. Which bodies a capture gives back exactly:
- compact/v3: every non-empty body (contexts.blobs holds the bytes);
- compact/v2: a body that is the record's own serialization of its context
  (`roller.capture.context.context_json`), as harnesses sending compact JSON send it;
  any other body (spaces, escapes the record writes differently, not JSON) stays inline.
`CaptureBodies` resolves references for the tape reader: it rebuilds the body from the
call's record through the capture reader and the reader checks length and sha256, so a
body is never taken on trust. It opens calls.jsonl and contexts.blobs once, at start,
so re-finalizing (which replaces both) keeps reading what the tape was rewritten for.
A segment that is not whole (a torn tail, a problem) is left as it is. Each segment is
replaced atomically, so a crash leaves every segment either old or rewritten, both
readable.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Mapping
from pathlib import Path

from roller.capture.blob_store import BlobStore
from roller.capture.blobs import BlobError
from roller.capture.context import context_json
from roller.capture.files import fsync_dir
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.tape.format import REF_VERSION, BodyRef, dumps_header, list_segments


class CaptureBodies:
    """Request bodies as the attempt's published capture gives them back."""

    def __init__(self, paths: AttemptPaths) -> None:
        self._calls = open(paths.calls, "rb") if paths.calls.exists() else None  # noqa: SIM115
        self._store = BlobStore(paths.contexts) if paths.contexts.exists() else None
        self._lines: array[int] | None = None

    def __enter__(self) -> CaptureBodies:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._calls is not None:
            self._calls.close()
        if self._store is not None:
            self._store.close()

    def __call__(self, ref: BodyRef) -> bytes | None:
        record = self._record(ref.sequence)
        if record is None or record.call_id != ref.call_id:
            return None
        if record.context_ref is not None:
            if self._store is None:
                return None
            try:
                return self._store.body(record.context_ref)
            except BlobError:
                return None
        return context_json(record.context) if record.context is not None else b""

    def _record(self, line: int) -> CallRecord | None:
        if self._calls is None:
            return None
        if self._lines is None:
            self._lines = array("q", [0])
            for raw in self._calls:
                self._lines.append(self._lines[-1] + len(raw))
        if not 0 <= line < len(self._lines) - 1:
            return None
        self._calls.seek(self._lines[line])
        try:
            return CallRecord.model_validate_json(self._calls.readline())
        except ValueError:
            return None


def rewrite_tape(tape: Path, refs: Mapping[str, BodyRef], bodies: Mapping[str, bytes]) -> int:
    """Replace the body frames of the exchanges in `refs` by `bref` frames; put back inline
    the `bref` frames of exchanges not in `refs` (their bodies in `bodies`). Returns the
    bytes saved. Segments that do not read whole are left as they are; an attempt killed
    before its proxy started has no tape directory, and nothing to rewrite."""
    saved = 0
    done: set[str] = set()  # across segments: a body may span a segment rotation
    if not tape.is_dir():
        return saved
    for _, path in list_segments(tape):
        data = path.read_bytes()
        rewritten = _segment(data, refs, bodies, done)
        if rewritten is None or rewritten == data:
            continue
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        with open(tmp, "wb") as fh:
            fh.write(rewritten)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        saved += len(data) - len(rewritten)
    fsync_dir(tape)
    return saved


def _segment(
    data: bytes, refs: Mapping[str, BodyRef], bodies: Mapping[str, bytes], done: set[str]
) -> bytes | None:
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        newline = data.find(b"\n", pos)
        if newline < 0:
            return None
        try:
            header = json.loads(data[pos:newline])
            stop = newline + 1 + int(header["n"])
        except (ValueError, KeyError, TypeError):
            return None
        if data[stop : stop + 1] != b"\n":
            return None
        kind, x = header.get("k"), header.get("x")
        if kind == "seg":
            out.append(dumps_header({**header, "v": max(REF_VERSION, header.get("v", 1))}))
            out.append(b"\n\n")
        elif kind in ("body", "bref") and isinstance(x, str) and (x in refs or kind == "bref"):
            if x not in done:  # an exchange's body frames become one frame
                done.add(x)
                out.append(_body_frame(x, header["t"], refs.get(x), bodies.get(x, b"")))
        else:
            out.append(data[pos : stop + 1])
        pos = stop + 1
    return b"".join(out)


def _body_frame(x: str, t: int, ref: BodyRef | None, body: bytes) -> bytes:
    if ref is not None:
        header = {"k": "bref", "x": x, "t": t, "n": 0, "meta": ref.to_meta()}
        return dumps_header(header) + b"\n\n"
    return dumps_header({"k": "body", "x": x, "t": t, "n": len(body)}) + b"\n" + body + b"\n"

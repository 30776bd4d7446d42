"""Where a published call's context goes: inline in calls.jsonl, or in contexts.blobs.

compact/v2 (the default) writes each record with its `context` (the spilled record JSON
spliced in, `roller.capture.context.with_context`). compact/v3 (`--storage-layout
compact/v3`) writes `context: null` and `context_ref`, the digest of the request body's
exact bytes stored content-addressed (`roller.capture.blobs`): a body of zero bytes has
no context and no reference. The blob file is written to a temporary sibling while the
records stream and handed to the writer to move in place (`written`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from roller.capture.blobs import BlobWriter
from roller.capture.context import with_context, with_context_ref
from roller.capture.layout import CONTEXTS, AttemptPaths
from roller.capture.models import StorageLayout


class Contexts:
    def __init__(self, paths: AttemptPaths, layout: StorageLayout) -> None:
        self.layout = layout
        self._tmp = paths.root / f".{CONTEXTS}.tmp-{os.getpid()}"
        self._fh: IO[bytes] | None = None
        self._blobs: BlobWriter | None = None
        if layout == "compact/v3":
            self._fh = open(self._tmp, "wb")  # noqa: SIM115 (closed by __exit__)
            self._blobs = BlobWriter(self._fh)

    def __enter__(self) -> Contexts:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None and not self._fh.closed:
            self._fh.close()
        self._tmp.unlink(missing_ok=True)  # moved in place by then, unless publication failed

    def line(self, record: bytes, body: bytes, context: bytes | None) -> bytes:
        """The record's line in calls.jsonl from its JSON with `context: null`; `body` is
        the request body, `context` the context's record JSON (None without one)."""
        if self._blobs is None:
            return with_context(record + b"\n", context)
        if not body:
            return record + b"\n"
        return with_context_ref(record, self._blobs.add_body(body)) + b"\n"

    def gives_back(self, body: bytes, context_is_body: bool) -> bool:
        """Whether the published capture holds this request body exactly (so raw/'s tape
        may reference it instead: `roller.capture.body_refs`)."""
        return bool(body) and (self._blobs is not None or context_is_body)

    def finish(self) -> None:
        """Every line was produced: the blob file is complete."""
        if self._fh is not None:
            self._fh.close()

    def written(self) -> dict[str, Path]:
        """The formal files written beside calls.jsonl, once every line was produced."""
        if self._fh is None:
            return {}
        return {CONTEXTS: self._tmp}

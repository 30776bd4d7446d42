"""A compact/v3 blob file read back: `BlobStore(path).body(hex digest)` rebuilds a
request body exactly as it was stored (the format: `roller.capture.blobs`).

Rules kept:
- Every frame's header is indexed when the store opens (a torn or corrupt frame is a
  `BlobError` then); every node read is checked against its whole digest (a payload
  that does not hash to it, or does not decompress, is a `BlobError` naming the node),
  so a damaged store never yields a body, and a reader checks each rebuilt body against
  its record's `context_sha256` besides (`roller.capture.reader`).
- Memory is the index (~45 bytes a node: a 100k-call capture's ~570k nodes in ~26 MB)
  and a bounded cache of rebuilt bytes, whatever the number of bodies read.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from binascii import unhexlify
from collections import OrderedDict
from pathlib import Path
from typing import Final

from roller.capture.blobs import DIGEST_BYTES, BlobError, concat_digest, leaf_digest
from roller.capture.digest_table import DigestMap


class BlobStore:
    """A blob file opened for reading: `body(hex digest)` rebuilds what was stored.

    Recently rebuilt bytes are kept per node (`cache_bytes` in all, least recently
    used first out): a leaf's payload, and every node's bytes below a body's root. Call
    k+1 of a conversation names call k's chain nodes for its first messages, so its body
    is rebuilt from the first node an earlier body rebuilt, not from every element's
    leaf again. Each node read from the file is checked against its digest first.
    8 MiB holds the recent chains of ~50 conversations of 50 KB transcripts taking
    turns; reading a 100k-call capture took the same time with 2, 8 and 32 MiB (the
    benchmark's conversations one after another) and 109, 117 and 140 MB at its peak."""

    def __init__(self, path: Path, cache_bytes: int = 8 << 20) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._index = DigestMap(_KEY_BYTES, 2)  # digest -> (offset, `_flags(...)`)
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._cached = 0
        self._cache_bytes = cache_bytes
        try:
            self._scan()
        except BaseException:
            os.close(self._fd)  # a store that does not open holds no descriptor
            raise

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> BlobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scan(self) -> None:
        """Index every frame's header. A header as the writer writes it is read by one
        pattern (where `json.loads` on the line took most of the scan's time), any other
        JSON header line by `json.loads`; a header that is neither, or a payload cut
        short, is a `BlobError`. Read through a buffer, not mapped: a mapping would hold
        every page of the file it touched (each frame's) in the process's memory."""
        with open(self.path, "rb", buffering=1 << 20) as fh:
            pos = 0
            while line := fh.readline():
                match = _HEADER.fullmatch(line)
                if match is not None:
                    digest, kind = unhexlify(match[1]), "b" if match[2] == b"b" else "c"
                    codec, n = None if match[3] is None else "zlib", int(match[4])
                else:
                    digest, kind, codec, n = self._header(line, pos)
                start = pos + len(line)
                fh.seek(start + n)
                if n > _LENGTH or fh.read(1) != b"\n":
                    raise BlobError(f"{self.path}: torn frame at byte {pos}")
                self._index.put(digest, (start, _flags(n, kind, codec)))
                pos = start + n + 1

    def _header(self, line: bytes, pos: int) -> tuple[bytes, str, str | None, int]:
        """A header line read as JSON: (digest, kind, codec, payload length)."""
        try:
            header = json.loads(line)
            digest = bytes.fromhex(header["h"])
            kind, codec, n = header["k"], header.get("z"), int(header["n"])
            if len(digest) != DIGEST_BYTES or kind not in ("b", "c") or n < 0:
                raise ValueError(header)
            if codec is not None and not isinstance(codec, str):
                raise ValueError(header)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise BlobError(f"{self.path}: corrupt frame header at byte {pos}") from exc
        return digest, kind, codec, n

    def body(self, hex_digest: str) -> bytes:
        try:
            digest = bytes.fromhex(hex_digest)
        except ValueError:
            raise BlobError(f"{self.path}: {hex_digest!r} is not a digest") from None
        return self._rebuilt(digest)

    def _rebuilt(self, root: bytes) -> bytes:
        """The bytes below `root`, walked depth first without recursion (a chain is as
        deep as its array is long), down to the nodes whose bytes are kept."""
        stack: list[tuple[bytes, int]] = [(root, -1)]  # (node, -1) or (node, its child count)
        done: list[bytes] = []  # the bytes of the nodes walked, in order
        while stack:
            digest, count = stack.pop()
            if count >= 0:  # its children are done: its bytes are theirs
                cut = len(done) - count
                data = b"".join(done[cut:])
                del done[cut:]
                if digest != root:
                    self._keep(digest, data)
                done.append(data)
                continue
            kept = self._cache.get(digest)
            if kept is not None:
                self._cache.move_to_end(digest)
                done.append(kept)
                continue
            kind, payload = self._node(digest)
            if kind == "b":
                self._keep(digest, payload)
                done.append(payload)
                continue
            children = [payload[j : j + DIGEST_BYTES] for j in range(0, len(payload), DIGEST_BYTES)]
            stack.append((digest, len(children)))
            stack.extend((child, -1) for child in reversed(children))
        return done[0]

    def _keep(self, digest: bytes, data: bytes) -> None:
        self._cache[digest] = data
        self._cached += len(data)
        while self._cached > self._cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)

    def _node(self, digest: bytes) -> tuple[str, bytes]:
        """A node's kind and payload, read from the file and checked against its digest."""
        entry = self._index.get(digest)
        if entry is None:
            raise BlobError(f"{self.path}: no node {digest.hex()}")
        start, flags = entry
        n, kind, codec = flags >> _FLAGS, "c" if flags & _CONCAT else "b", flags & _CODEC
        payload = os.pread(self._fd, n, start)
        if codec == _ZLIB:
            try:
                payload = zlib.decompress(payload)
            except zlib.error as exc:
                raise BlobError(f"{self.path}: node {digest.hex()} does not decompress") from exc
        elif codec != _RAW:
            raise BlobError(f"{self.path}: node {digest.hex()} has an unknown codec")
        check = leaf_digest(payload) if kind == "b" else concat_digest(payload)
        if check != digest or (kind == "c" and len(payload) % DIGEST_BYTES):
            raise BlobError(f"{self.path}: node {digest.hex()} does not hash to its digest")
        return kind, payload


# The reader's index holds a node's digest by its first 16 bytes, and its frame as its
# payload's offset and one integer of length, kind and codec, in flat arrays
# (`roller.capture.digest_table`): ~45 bytes a node in memory (traced) where a dict of
# integers took ~126 and (digest, tuple) entries ~242 (a 100k-call capture has ~570k
# nodes). Two digests sharing 16 bytes are a 2^-128 chance a pair, and every node read
# is still checked against its whole digest.
_KEY_BYTES: Final = 16
_RAW, _ZLIB, _OTHER = 0, 1, 2  # codecs, in the low two bits
_CODEC: Final = 0b11
_CONCAT: Final = 1 << 2
_FLAGS: Final = 3
_LENGTH: Final = (1 << 40) - 1


def _flags(n: int, kind: str, codec: str | None) -> int:
    """A frame's payload length, kind and codec as one integer."""
    code = _RAW if codec is None else _ZLIB if codec == "zlib" else _OTHER
    return (n << _FLAGS) | (_CONCAT if kind == "c" else 0) | code


# A frame header as `BlobWriter._frame` writes it.
_HEADER: Final = re.compile(
    rb'\{"h":"([0-9a-f]{64})","k":"([bc])","z":(?:null|"(zlib)"),"n":(0|[1-9][0-9]{0,14})\}\n'
)

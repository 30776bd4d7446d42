"""The compact/v3 context store: request bodies cut into shared pieces, each stored once.

A harness resends its whole transcript on every call, so the same messages, system
prompt and tool schemas travel again and again; compact/v2 stores each call's context
whole and grows with the square of a conversation's length. compact/v3 stores every
request body as a tree of content-addressed nodes in one file, `contexts.blobs`:
- a leaf holds bytes (zlib-compressed when that is shorter);
- a concat node holds the digests of its children: its bytes are theirs, in order.
`split(body)` cuts a JSON object body along its structure (`_members`): one piece per
top-level key and value, and each array value as a chain — the first `n` elements are
the chain of `n - 1` elements plus element `n` (with its leading comma) — so call k+1 of
a conversation shares call k's chain node for its first messages and adds one node per
new message. Any other body (not a JSON object, not UTF-8, unbalanced) is one leaf. The
cut never changes a byte: joining the pieces gives the body exactly (checked as it is
written), and a reader checks every rebuilt body against the call's `context_sha256`.

File format: a sequence of frames, each a JSON header line `{"h": digest, "k": "b"|"c",
"z": "zlib"|null, "n": len}`, exactly `n` payload bytes, then `\\n` (a leaf's bytes, or a
concat node's 32-byte child digests). A node's digest is sha256 over its kind byte and
its content (`b` + bytes, `c` + child digests), so a leaf and a node never collide. A
node is written once, after its children. The reader indexes the headers (a few dozen
bytes per node in memory) and rebuilds a body by walking its tree; a frame whose payload
does not hash to its digest, or does not decompress, is a `BlobError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from roller.errors import CaptureFormatError

_DIGEST = 32
_SMALL = 64  # leaves shorter than this are stored as they are


class BlobError(CaptureFormatError):
    """The blob store does not hold what a record references (missing, damaged)."""


def leaf_digest(data: bytes) -> bytes:
    return hashlib.sha256(b"b" + data).digest()


def concat_digest(children: list[bytes]) -> bytes:
    return hashlib.sha256(b"c" + b"".join(children)).digest()


@dataclass(frozen=True, slots=True)
class Leaf:
    data: bytes


@dataclass(frozen=True, slots=True)
class Concat:
    children: tuple[Leaf | Concat, ...]


Node = Leaf | Concat


class BlobWriter:
    """Appends nodes to a blob file, each once (a set of digests is its whole memory)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self._known: set[bytes] = set()

    def add(self, node: Node) -> bytes:
        """Store `node` and everything below it; its digest."""
        if isinstance(node, Leaf):
            digest = leaf_digest(node.data)
            if digest not in self._known:
                packed = zlib.compress(node.data, 6) if len(node.data) >= _SMALL else b""
                if packed and len(packed) < len(node.data):
                    self._frame(digest, "b", "zlib", packed)
                else:
                    self._frame(digest, "b", None, node.data)
            return digest
        children = [self.add(child) for child in node.children]
        digest = concat_digest(children)
        if digest not in self._known:
            self._frame(digest, "c", None, b"".join(children))
        return digest

    def add_body(self, body: bytes) -> str:
        """Store a request body cut along its structure; the hex digest of its root."""
        node = split(body)
        if join(node) != body:  # the cut is exact by construction; never store a doubt
            node = Leaf(body)
        return self.add(node).hex()

    def _frame(self, digest: bytes, kind: str, codec: str | None, payload: bytes) -> None:
        header = {"h": digest.hex(), "k": kind, "z": codec, "n": len(payload)}
        self._fh.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        self._fh.write(payload + b"\n")
        self._known.add(digest)


def join(node: Node) -> bytes:
    out: list[bytes] = []
    stack: list[Node] = [node]
    while stack:
        top = stack.pop()
        if isinstance(top, Leaf):
            out.append(top.data)
        else:
            stack.extend(reversed(top.children))
    return b"".join(out)


# -- cutting a body ----------------------------------------------------------------------

_WS = " \t\n\r"
_decoder = json.JSONDecoder()


def split(body: bytes) -> Node:
    """The body as a tree of pieces (module docstring); one leaf when it cannot be cut."""
    try:
        text = body.decode("utf-8")
        pieces = _members(text)
    except (UnicodeDecodeError, ValueError, IndexError):
        return Leaf(body)
    return Concat(tuple(pieces))


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str) -> list[Node]:
    """A top-level object cut into: the text up to each value, each value, the rest."""
    i = _skip(text, 0)
    if text[i] != "{":
        raise ValueError("not an object")
    out: list[Node] = []
    start, i = 0, _skip(text, i + 1)
    while text[i] != "}":
        if text[i] != '"':
            raise ValueError("no key")
        _, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError("no colon")
        i = _skip(text, i + 1)
        out.append(Leaf(text[start:i].encode()))
        if text[i] == "[":
            node, i = _array(text, i)
            out.append(node)
        else:
            _, end = _decoder.raw_decode(text, i)
            out.append(Leaf(text[i:end].encode()))
            i = end
        start, i = i, _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
        elif text[i] != "}":
            raise ValueError("no comma")
    out.append(Leaf(text[start:].encode()))
    return out


def _array(text: str, i: int) -> tuple[Node, int]:
    """The array at `i` as (chain of its elements, closing text); and where it ends.
    Element n's piece starts where element n - 1 ended (its comma and spaces)."""
    first = _skip(text, i + 1)
    chain: Node = Leaf(text[i:first].encode())  # "[" and the spaces after it
    if text[first] == "]":
        return Concat((chain, Leaf(b"]"))), first + 1
    piece_start, pos = first, first
    while True:
        _, end = _decoder.raw_decode(text, pos)
        chain = Concat((chain, Leaf(text[piece_start:end].encode())))
        after = _skip(text, end)
        if text[after] == "]":
            return Concat((chain, Leaf(text[end : after + 1].encode()))), after + 1
        if text[after] != ",":
            raise ValueError("no comma in array")
        piece_start, pos = end, _skip(text, after + 1)


# -- reading ----------------------------------------------------------------------------


class BlobStore:
    """A blob file opened for reading: `body(hex digest)` rebuilds what was stored."""

    def __init__(self, path: Path, cache_bytes: int = 32 << 20) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._index: dict[bytes, tuple[int, int, str, str | None]] = {}
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._cached = 0
        self._cache_bytes = cache_bytes
        self._scan()

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> BlobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scan(self) -> None:
        with open(self.path, "rb") as fh:
            pos = 0
            for header, start, n in _frames(fh):
                digest = bytes.fromhex(str(header["h"]))
                codec = header.get("z")
                self._index[digest] = (
                    start,
                    n,
                    str(header["k"]),
                    None if codec is None else str(codec),
                )
                pos = start + n + 1
            if pos != os.fstat(self._fd).st_size:
                raise BlobError(f"{self.path}: trailing bytes after the last frame")

    def body(self, hex_digest: str) -> bytes:
        try:
            digest = bytes.fromhex(hex_digest)
        except ValueError:
            raise BlobError(f"{self.path}: {hex_digest!r} is not a digest") from None
        return b"".join(self._leaves(digest))

    def _leaves(self, digest: bytes) -> Iterator[bytes]:
        stack = [digest]
        while stack:
            d = stack.pop()
            kind, payload = self._node(d)
            if kind == "b":
                yield payload
            else:
                children = [payload[j : j + _DIGEST] for j in range(0, len(payload), _DIGEST)]
                stack.extend(reversed(children))

    def _node(self, digest: bytes) -> tuple[str, bytes]:
        hit = self._cache.get(digest)
        entry = self._index.get(digest)
        if entry is None:
            raise BlobError(f"{self.path}: no node {digest.hex()}")
        start, n, kind, codec = entry
        if hit is not None:
            self._cache.move_to_end(digest)
            return kind, hit
        payload = os.pread(self._fd, n, start)
        if codec == "zlib":
            try:
                payload = zlib.decompress(payload)
            except zlib.error as exc:
                raise BlobError(f"{self.path}: node {digest.hex()} does not decompress") from exc
        elif codec is not None:
            raise BlobError(f"{self.path}: node {digest.hex()} has unknown codec {codec!r}")
        check = leaf_digest(payload) if kind == "b" else hashlib.sha256(b"c" + payload).digest()
        if check != digest or (kind == "c" and len(payload) % _DIGEST):
            raise BlobError(f"{self.path}: node {digest.hex()} does not hash to its digest")
        self._cache[digest] = payload
        self._cached += len(payload)
        while self._cached > self._cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)
        return kind, payload


def _frames(fh: IO[bytes]) -> Iterator[tuple[dict[str, object], int, int]]:
    """(header, payload offset, payload length) of each frame; BlobError when torn."""
    pos = 0
    while line := fh.readline():
        try:
            header = json.loads(line)
            n = int(header["n"])
            if header["k"] not in ("b", "c") or n < 0:
                raise ValueError(header)
        except (ValueError, KeyError, TypeError) as exc:
            raise BlobError(f"{fh.name}: corrupt frame header at byte {pos}") from exc
        start = pos + len(line)
        fh.seek(start + n)
        if fh.read(1) != b"\n":
            raise BlobError(f"{fh.name}: torn frame at byte {pos}")
        yield header, start, n
        pos = start + n + 1

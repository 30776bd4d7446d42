"""The compact/v3 context store: request bodies cut into shared pieces, each stored once.

A harness resends its whole transcript on every call, so the same messages, system
prompt and tool schemas travel again and again; compact/v2 stores each call's context
whole and grows with the square of a conversation's length. compact/v3 stores every
request body as a tree of content-addressed nodes in one file, `contexts.blobs`:
- a leaf holds bytes (zlib-compressed when that is shorter);
- a concat node holds the digests of its children: its bytes are theirs, in order.

The cut (`BlobWriter.add_body`) follows a JSON object body's structure: one piece per
top-level key (the text up to its value) and value, and each array value as a chain —
the first `n` elements are the chain of `n - 1` elements plus element `n` (the text from
the end of element `n - 1`: its comma and spaces), closed by the text after the last
element — so call k+1 of a conversation shares call k's chain node for its first
messages and adds one node per new message. Any other body (not a JSON object, not
UTF-8, unbalanced, nested past the parser's depth) is one leaf. The pieces are
contiguous slices of the body, so joining them gives it exactly; a reader checks every
rebuilt body against the call's `context_sha256`.

Cost: a body is cut in time proportional to what is new in it. The writer keeps recent
prefixes with the digests cut up to their end (`_Kept`, bounded in count and size): each
array's text up to its last element's end with the chain digest there, and each body's
bytes up to its first array with new elements with the pieces before that value. A body
that begins with a kept body's bytes (the next byte not a space: the key's piece ends
there) resumes at that value, and an array that begins with a kept array's text (the
element boundary confirmed by what follows it, for numbers) resumes from its chain, so
only the new elements are parsed and hashed. What is cut up to a point is a function of
the bytes before it alone, so the nodes and the root are the ones a cut from the first
byte gives (tests/capture/test_blobs.py checks the file byte for byte against that
reference cut). Without it each call's whole transcript was parsed and hashed again:
finalize in compact/v3 took 2.3× the time of compact/v2 at 10k calls (docs/benchmarks.md,
round 11).

File format: a sequence of frames, each a JSON header line `{"h": digest, "k": "b"|"c",
"z": "zlib"|null, "n": len}`, exactly `n` payload bytes, then `\\n` (a leaf's bytes, or a
concat node's 32-byte child digests). A node's digest is sha256 over its kind byte and
its content (`b` + bytes, `c` + child digests), so a leaf and a node never collide. A
node is written once, after its children; a body's frames are written only once its
cut is complete. The reader indexes the headers (a few dozen bytes per node in memory)
and rebuilds a body by walking its tree; a frame whose payload does not hash to its
digest, or does not decompress, is a `BlobError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import zlib
from binascii import unhexlify
from collections import OrderedDict
from pathlib import Path
from typing import IO, Final, Generic, TypeVar

from roller.errors import CaptureFormatError

_DIGEST = 32
_SMALL = 64  # leaves shorter than this are stored as they are


class BlobError(CaptureFormatError):
    """The blob store does not hold what a record references (missing, damaged)."""


def leaf_digest(data: bytes) -> bytes:
    return hashlib.sha256(b"b" + data).digest()


def concat_digest(children: list[bytes]) -> bytes:
    return hashlib.sha256(b"c" + b"".join(children)).digest()


class _Uncut(Exception):
    """The body cannot be cut along its structure: it is stored as one leaf."""


class BlobWriter:
    """Appends nodes to a blob file, each once (a set of digests and the recent arrays'
    cuts are its whole memory)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self._known: set[bytes] = set()
        self._chains: _Kept[str] = _Kept()  # arrays: text to the last element's end, its chain
        self._tops: _Kept[bytes] = _Kept()  # bodies: bytes to a top-level value, children so far
        # The body being cut: its new frames, held until the cut is complete (a body
        # that turns out not to cut writes nothing of its pieces), and its arrays' ends.
        self._pending: list[bytes] = []
        self._new: set[bytes] = set()
        self._cut: list[tuple[str, bytes]] = []
        self._top: list[tuple[int, tuple[bytes, ...]]] = []  # at most one

    def add_body(self, body: bytes) -> str:
        """Store a request body cut along its structure; the hex digest of its root."""
        self._pending, self._new, self._cut, self._top = [], set(), [], []
        try:
            root = self._members(body)
        except (UnicodeDecodeError, ValueError, IndexError, RecursionError, _Uncut):
            self._pending, self._new, self._cut, self._top = [], set(), [], []
            root = self._leaf(body)
        self._fh.write(b"".join(self._pending))
        self._known |= self._new
        for prefix, digest in self._cut:
            self._chains.keep(prefix, (digest,))
        for end, children in self._top:
            self._tops.keep(body[:end], children)
        self._pending, self._new, self._cut, self._top = [], set(), [], []
        return root.hex()

    # -- nodes

    def _leaf(self, data: bytes) -> bytes:
        digest = hashlib.sha256(b"b" + data).digest()
        if digest not in self._known and digest not in self._new:
            packed = zlib.compress(data, 6) if len(data) >= _SMALL else b""
            if packed and len(packed) < len(data):
                self._frame(digest, b"b", b'"zlib"', packed)
            else:
                self._frame(digest, b"b", b"null", data)
        return digest

    def _concat(self, children: list[bytes]) -> bytes:
        payload = b"".join(children)
        digest = hashlib.sha256(b"c" + payload).digest()
        if digest not in self._known and digest not in self._new:
            self._frame(digest, b"c", b"null", payload)
        return digest

    def _frame(self, digest: bytes, kind: bytes, codec: bytes, payload: bytes) -> None:
        # The header as `json.dumps({"h", "k", "z", "n"}, separators=(",", ":"))` writes it.
        self._pending.append(
            b'{"h":"%s","k":"%s","z":%s,"n":%d}\n%s\n'
            % (digest.hex().encode(), kind, codec, len(payload), payload)
        )
        self._new.add(digest)

    # -- the cut

    def _members(self, body: bytes) -> bytes:
        """A top-level object cut into: the text up to each value, each value, the rest.
        Resumed where a kept body's bytes end, at one of its values (`_tops`): the
        pieces before it are this body's too."""
        offset, children = self._resumed(body)
        text = body[offset:].decode("utf-8")
        at_value = bool(offset)
        start = i = 0
        if not at_value:
            i = _skip(text, 0)
            if text[i] != "{":
                raise _Uncut
            i = _skip(text, i + 1)
        while at_value or text[i] != "}":
            if not at_value:
                i = self._key(text, i)
                children.append(self._leaf(text[start:i].encode()))
            at_value = False
            if text[i] == "[":
                value = i
                digest, i, fresh = self._array(text, i)
                # Kept: the body's bytes up to its first array with new elements, where
                # the conversation's next call resumes (bytes: an ASCII text's offsets).
                if fresh and not self._top and text.isascii():
                    self._top.append((offset + value, tuple(children)))
                children.append(digest)
            else:
                _, end = _decoder.raw_decode(text, i)
                children.append(self._leaf(text[i:end].encode()))
                i = end
            start, i = i, _skip(text, i)
            if text[i] == ",":
                i = _skip(text, i + 1)
            elif text[i] != "}":
                raise _Uncut
        children.append(self._leaf(text[start:].encode()))
        return self._concat(children)

    def _resumed(self, body: bytes) -> tuple[int, list[bytes]]:
        """Where a kept body's bytes that this one begins with end, at a value (its first
        byte not a space: the key's piece ends there in this body too), and the pieces
        up to there; (0, []) when none."""
        for length, children in self._tops.matches(body, 0):
            first = body[length : length + 1]
            if first and first not in b" \t\n\r":
                return length, list(children)
        return 0, []

    @staticmethod
    def _key(text: str, i: int) -> int:
        """Past the key at `i`, its colon and the spaces after it: where its value starts."""
        if text[i] != '"':
            raise _Uncut
        _, i = _scanstring(text, i + 1)
        i = _skip(text, i)
        if text[i] != ":":
            raise _Uncut
        return _skip(text, i + 1)

    def _array(self, text: str, i: int) -> tuple[bytes, int, bool]:
        """The array at `i` as (chain of its elements, closing text); where it ends; and
        whether an element was cut (not all resumed from a kept chain). Element n's
        piece starts where element n - 1 ended (its comma and spaces)."""
        first = _skip(text, i + 1)
        if text[first] == "]":
            node = self._concat([self._leaf(text[i:first].encode()), self._leaf(b"]")])
            return node, first + 1, False
        for length, (chain,) in self._chains.matches(text, i):
            end = i + length
            # A number's end is known only by what follows it: that must end an element.
            if end < len(text) and text[end] in _AFTER_ELEMENT:
                after = _skip(text, end)
                if text[after] == "]":
                    return *self._closed(text, i, chain, end, after), False
                piece_start, pos = end, _skip(text, after + 1)
                break
        else:  # from the first element
            chain = self._leaf(text[i:first].encode())  # "[" and the spaces after it
            piece_start, pos = first, first
        while True:
            _, end = _decoder.raw_decode(text, pos)
            chain = self._concat([chain, self._leaf(text[piece_start:end].encode())])
            after = _skip(text, end)
            if text[after] == "]":
                return *self._closed(text, i, chain, end, after), True
            if text[after] != ",":
                raise _Uncut
            piece_start, pos = end, _skip(text, after + 1)

    def _closed(self, text: str, i: int, chain: bytes, end: int, after: int) -> tuple[bytes, int]:
        """The array's node from its chain up to its last element's `end` and its closing
        text; that chain kept for the next body once this one is stored."""
        self._cut.append((text[i:end], chain))
        return self._concat([chain, self._leaf(text[end : after + 1].encode())]), after + 1


_WS = " \t\n\r"
_decoder = json.JSONDecoder()
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_AFTER_ELEMENT: Final = frozenset(_WS + ",]")  # what may follow an element's last character


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


_S = TypeVar("_S", str, bytes)


class _Kept(Generic[_S]):
    """Recent prefixes (an array's text to its last element's end; a body's bytes to one
    of its values) with the digests cut up to their end, found by their first `KEY`
    characters or bytes. Bounded: `KEYS` first parts, `PER_KEY` prefixes under each,
    `BYTES` of prefixes in memory in all (`sys.getsizeof`: a text of wide characters
    takes up to four bytes a character); the least recently used first part goes first."""

    KEY: Final = 256  # shorter prefixes are cheap to cut again and are not kept
    KEYS: Final = 64
    PER_KEY: Final = 4
    BYTES: Final = 64 << 20

    def __init__(self) -> None:
        self._by_key: OrderedDict[_S, list[tuple[_S, tuple[bytes, ...]]]] = OrderedDict()
        self._bytes = 0

    def matches(self, seq: _S, i: int) -> list[tuple[int, tuple[bytes, ...]]]:
        """The kept prefixes `seq` holds at `i`, longest first: (length, digests)."""
        kept = self._by_key.get(seq[i : i + self.KEY])
        if kept is None:
            return []
        found = [(len(prefix), cut) for prefix, cut in kept if seq.startswith(prefix, i)]
        return sorted(found, key=lambda match: -match[0])

    def keep(self, prefix: _S, cut: tuple[bytes, ...]) -> None:
        if len(prefix) < self.KEY:
            return
        key = prefix[: self.KEY]
        kept = self._by_key.pop(key, [])
        for old in [k for k in kept if prefix.startswith(k[0])]:  # this one covers them
            kept.remove(old)
            self._bytes -= sys.getsizeof(old[0])
        kept.insert(0, (prefix, cut))
        self._bytes += sys.getsizeof(prefix)
        while len(kept) > self.PER_KEY:
            self._bytes -= sys.getsizeof(kept.pop()[0])
        self._by_key[key] = kept
        while len(self._by_key) > self.KEYS or (self._bytes > self.BYTES and self._by_key):
            _, dropped = self._by_key.popitem(last=False)
            self._bytes -= sum(sys.getsizeof(p) for p, _ in dropped)


# -- reading ----------------------------------------------------------------------------


class BlobStore:
    """A blob file opened for reading: `body(hex digest)` rebuilds what was stored.

    Recently rebuilt bytes are kept per node (`cache_bytes` in all, least recently
    used first out): a leaf's payload, and every node's bytes below a body's root. Call
    k+1 of a conversation names call k's chain nodes for its first messages, so its body
    is rebuilt from the first node an earlier body rebuilt, not from every element's
    leaf again. Each node read from the file is checked against its digest first."""

    def __init__(self, path: Path, cache_bytes: int = 32 << 20) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._index: dict[int, int] = {}  # `_key(digest)` -> `_entry(...)`
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
                self._index[_key(digest)] = _entry(start, n, kind, codec)
                pos = start + n + 1

    def _header(self, line: bytes, pos: int) -> tuple[bytes, str, str | None, int]:
        """A header line read as JSON: (digest, kind, codec, payload length)."""
        try:
            header = json.loads(line)
            digest = bytes.fromhex(header["h"])
            kind, codec, n = header["k"], header.get("z"), int(header["n"])
            if len(digest) != _DIGEST or kind not in ("b", "c") or n < 0:
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
            children = [payload[j : j + _DIGEST] for j in range(0, len(payload), _DIGEST)]
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
        entry = self._index.get(_key(digest))
        if entry is None:
            raise BlobError(f"{self.path}: no node {digest.hex()}")
        start, n = entry >> _START, (entry >> _FLAGS) & _LENGTH
        kind, codec = "c" if entry & _CONCAT else "b", entry & _CODEC
        payload = os.pread(self._fd, n, start)
        if codec == _ZLIB:
            try:
                payload = zlib.decompress(payload)
            except zlib.error as exc:
                raise BlobError(f"{self.path}: node {digest.hex()} does not decompress") from exc
        elif codec != _RAW:
            raise BlobError(f"{self.path}: node {digest.hex()} has an unknown codec")
        check = leaf_digest(payload) if kind == "b" else hashlib.sha256(b"c" + payload).digest()
        if check != digest or (kind == "c" and len(payload) % _DIGEST):
            raise BlobError(f"{self.path}: node {digest.hex()} does not hash to its digest")
        return kind, payload


# The reader's index holds a node's digest by its first 16 bytes and its frame as one
# integer: ~120 bytes a node in memory where (digest, tuple) entries took ~550 (a
# 100k-call capture has ~570k nodes). Two digests sharing 16 bytes are a 2^-128 chance
# a pair, and every node read is still checked against its whole digest.
_RAW, _ZLIB, _OTHER = 0, 1, 2  # codecs, in the low two bits
_CODEC: Final = 0b11
_CONCAT: Final = 1 << 2
_FLAGS: Final = 3
_LENGTH: Final = (1 << 40) - 1
_START: Final = _FLAGS + 40


def _key(digest: bytes) -> int:
    return int.from_bytes(digest[:16], "big")


def _entry(start: int, n: int, kind: str, codec: str | None) -> int:
    """A frame as one integer: payload offset, length, kind, codec."""
    code = _RAW if codec is None else _ZLIB if codec == "zlib" else _OTHER
    return (start << _START) | (n << _FLAGS) | (_CONCAT if kind == "c" else 0) | code


# A frame header as `BlobWriter._frame` writes it.
_HEADER: Final = re.compile(
    rb'\{"h":"([0-9a-f]{64})","k":"([bc])","z":(?:null|"(zlib)"),"n":(0|[1-9][0-9]{0,14})\}\n'
)

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
prefixes with the digests cut up to their end (`roller.capture.blob_kept`: `Kept`,
bounded in count and size): each array's text up to its last element's end with the
chain digest at every element's end (`Chain`), and each body's bytes up to its first
array with new elements with the pieces before that value. A body that begins with a
kept body's bytes (the next byte not a space: the key's piece ends there) resumes at
that value, and an array that begins with a kept array's first elements resumes from the
chain at the last of them (the largest such run, by binary search over the element ends;
the boundary confirmed by what follows it, for numbers), so only the elements after it
are parsed and hashed. That run need not be the whole kept array: Claude Code (2.1)
moves its `cache_control` marker to the newest message on every request, so the previous
last message comes again changed; resuming only from a whole kept array cut every such
transcript from its first message (finalize in compact/v3, one process, spent ~30% of
its time here at 10k calls: docs/benchmarks.md, round 23). And the text after a body's
first grown array, when a recent body ended with the same text (`Tails`: the system
prompt, tools and settings Claude Code sends after its transcript), takes that body's
pieces unparsed. What is cut up to a point is a function of the bytes before it alone,
and what is cut after it of the bytes after it, so the nodes and the root are the ones a
cut from the first byte gives (tests/capture/test_blobs.py checks the file byte for byte
against that reference cut). Without it each call's whole transcript was parsed and
hashed again: finalize in compact/v3 took 2.3× the time of compact/v2 at 10k calls
(docs/benchmarks.md, round 11).

File format: a sequence of frames, each a JSON header line `{"h": digest, "k": "b"|"c",
"z": "zlib"|null, "n": len}`, exactly `n` payload bytes, then `\\n` (a leaf's bytes, or a
concat node's 32-byte child digests). A node's digest is sha256 over its kind byte and
its content (`b` + bytes, `c` + child digests), so a leaf and a node never collide. A
node is written once, after its children; a body's frames are written only once its
cut is complete. `roller.capture.blob_store` reads the file back.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import IO, Final

from roller.capture.blob_kept import Chain, Kept, Tails, shared_elements
from roller.errors import CaptureFormatError

DIGEST_BYTES = 32  # a node's digest: sha256
_SMALL = 64  # leaves shorter than this are stored as they are


class BlobError(CaptureFormatError):
    """The blob store does not hold what a record references (missing, damaged)."""


def leaf_digest(data: bytes) -> bytes:
    return hashlib.sha256(b"b" + data).digest()


def concat_digest(payload: bytes) -> bytes:
    """A concat node's digest from its payload, its children's digests joined."""
    return hashlib.sha256(b"c" + payload).digest()


class _Uncut(Exception):
    """The body cannot be cut along its structure: it is stored as one leaf."""


class BlobWriter:
    """Appends nodes to a blob file, each once (a set of digests and the recent arrays'
    cuts are its whole memory)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        # (A Python set: `roller.capture.digest_table`'s took half the memory and made
        # finalize 3-4% slower at 100k calls, a cut from the first byte ~30% slower: it is
        # asked for every node hashed, ~1 µs more a time.)
        self._known: set[bytes] = set()
        self._chains: Kept[str, Chain] = Kept(Chain.size)  # arrays: text to the last end
        self._tops: Kept[bytes, tuple[bytes, ...]] = Kept()  # bodies: to a value, pieces so far
        # The body being cut: its new frames, held until the cut is complete (a body
        # that turns out not to cut writes nothing of its pieces), and its arrays' ends.
        self._pending: list[bytes] = []
        self._new: set[bytes] = set()
        self._cut: list[tuple[str, Chain]] = []
        self._rest: tuple[str, tuple[bytes, ...]] | None = None
        self._tails = Tails()  # recent bodies: the text after their first grown array

    def add_body(self, body: bytes) -> str:
        """Store a request body cut along its structure; the hex digest of its root."""
        self._begin()
        try:
            root, top = self._members(body)
        except (UnicodeDecodeError, ValueError, IndexError, RecursionError, _Uncut):
            self._begin()
            root, top = self._leaf(body), None
        self._fh.write(b"".join(self._pending))
        self._known |= self._new
        for prefix, chain in self._cut:
            self._chains.keep(prefix, chain)
        if top is not None:
            self._tops.keep(body[: top[0]], top[1])
        if self._rest is not None:
            self._tails.keep(*self._rest)
        self._begin()  # (the frames written: not held until the next body)
        return root.hex()

    def _begin(self) -> None:
        self._pending, self._new, self._cut, self._rest = [], set(), [], None

    # -- nodes

    def _leaf(self, data: bytes) -> bytes:
        digest = leaf_digest(data)
        if digest not in self._known and digest not in self._new:
            packed = zlib.compress(data, 6) if len(data) >= _SMALL else b""
            if packed and len(packed) < len(data):
                self._frame(digest, b"b", b'"zlib"', packed)
            else:
                self._frame(digest, b"b", b"null", data)
        return digest

    def _concat(self, children: list[bytes]) -> bytes:
        payload = b"".join(children)
        digest = concat_digest(payload)
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

    def _members(self, body: bytes) -> tuple[bytes, tuple[int, tuple[bytes, ...]] | None]:
        """A top-level object cut into: the text up to each value, each value, the rest.
        Resumed where a kept body's bytes end, at one of its values (`_tops`): the
        pieces before it are this body's too. Returns the root and what to keep of the
        body: the bytes up to its first array with new elements, where the
        conversation's next call resumes (bytes: kept for an ASCII text only, whose
        offsets are its bytes'), with the pieces before it.

        After the first array with new elements, the rest of the text is often a recent
        body's (a conversation's system prompt, tools and settings after its transcript):
        its pieces are a function of that text alone, so they are taken as that body's
        were cut (`Tails`), all of them stored already."""
        top: tuple[int, tuple[bytes, ...]] | None = None
        # after the first array with new elements: the pieces before the rest, and where
        # the rest begins (-1: no such array yet)
        grown, rest_at = -1, 0
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
                if fresh and top is None and text.isascii():
                    top = (offset + value, tuple(children))
                children.append(digest)
                if fresh and grown < 0:
                    rest = self._tails.find(text, i)
                    if rest is not None:
                        return self._concat([*children, *rest]), top
                    grown = len(children)
                    rest_at = i
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
        if grown >= 0:
            self._rest = (text[rest_at:], tuple(children[grown:]))
        return self._concat(children), top

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
        shared = self._shared(text, i)
        if shared is not None:
            ends, chains = list(shared.ends), list(shared.digests)
            end = i + ends[-1]
            after = _skip(text, end)
            if text[after] == "]":
                return *self._closed(text, i, ends, chains, after), False
            if text[after] != ",":
                raise _Uncut
            chain, piece_start, pos = chains[-1], end, _skip(text, after + 1)
        else:  # from the first element
            ends, chains = [], []
            chain = self._leaf(text[i:first].encode())  # "[" and the spaces after it
            piece_start, pos = first, first
        while True:
            _, end = _decoder.raw_decode(text, pos)
            chain = self._concat([chain, self._leaf(text[piece_start:end].encode())])
            ends.append(end - i)
            chains.append(chain)
            after = _skip(text, end)
            if text[after] == "]":
                return *self._closed(text, i, ends, chains, after), True
            if text[after] != ",":
                raise _Uncut
            piece_start, pos = end, _skip(text, after + 1)

    def _shared(self, text: str, i: int) -> Chain | None:
        """The longest run of a kept array's first elements that the array at `i` begins
        with, as a `Chain` of those elements; None when there is none."""
        best: Chain | None = None
        for prefix, chain in self._chains.entries(text, i):
            n = shared_elements(text, i, prefix, chain.ends)
            # A number's end is known only by what follows it: that must end an element
            # (inside the kept text it does; after all of it, it is this text's).
            end = i + chain.ends[n - 1] if n else 0
            if n and not (end < len(text) and text[end] in _AFTER_ELEMENT):
                n -= 1
            if n and (best is None or chain.ends[n - 1] > best.ends[-1]):
                best = Chain(chain.ends[:n], chain.digests[:n])
        return best

    def _closed(
        self, text: str, i: int, ends: list[int], chains: list[bytes], after: int
    ) -> tuple[bytes, int]:
        """The array's node from its chain up to its last element's end and its closing
        text; the chains kept for the next body once this one is stored."""
        end = i + ends[-1]
        self._cut.append((text[i:end], Chain(tuple(ends), tuple(chains))))
        return self._concat([chains[-1], self._leaf(text[end : after + 1].encode())]), after + 1


_WS = " \t\n\r"
_decoder = json.JSONDecoder()
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_AFTER_ELEMENT: Final = frozenset(_WS + ",]")  # what may follow an element's last character


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i

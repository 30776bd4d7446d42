"""compact/v3's blob writer: the file it writes is the one the reference cut gives.

The reference (`_Reference`, below) is the cut as the module docstring states it, done
the plain way: every body cut from its first byte into a tree, every node hashed, the
tree's frames written post-order, each digest once. `BlobWriter` resumes each array from
the recent arrays' cuts instead of cutting it again; over generated sequences of bodies
(growing conversations taking turns, histories edited, numbers and spaces where a kept
cut ends, bodies that do not cut) the two files are equal byte for byte, every root is
the same, and `BlobStore` rebuilds every body exactly.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tracemalloc
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.capture.blob_kept import Kept
from roller.capture.blob_store import BlobStore
from roller.capture.blobs import BlobError, BlobWriter
from tests.wire.settings import FUZZ

# -- the reference cut ------------------------------------------------------------------


@dataclass(frozen=True)
class _Leaf:
    data: bytes


@dataclass(frozen=True)
class _Concat:
    children: tuple[_Leaf | _Concat, ...]


_Node = _Leaf | _Concat
_WS = " \t\n\r"
_decoder = json.JSONDecoder()


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _cut(body: bytes) -> _Node:
    try:
        text = body.decode("utf-8")
        return _Concat(tuple(_members(text)))
    except (UnicodeDecodeError, ValueError, IndexError, RecursionError):
        return _Leaf(body)


def _members(text: str) -> list[_Node]:
    i = _skip(text, 0)
    if text[i] != "{":
        raise ValueError("not an object")
    out: list[_Node] = []
    start, i = 0, _skip(text, i + 1)
    while text[i] != "}":
        if text[i] != '"':
            raise ValueError("no key")
        _, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError("no colon")
        i = _skip(text, i + 1)
        out.append(_Leaf(text[start:i].encode()))
        if text[i] == "[":
            node, i = _array(text, i)
            out.append(node)
        else:
            _, end = _decoder.raw_decode(text, i)
            out.append(_Leaf(text[i:end].encode()))
            i = end
        start, i = i, _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
        elif text[i] != "}":
            raise ValueError("no comma")
    out.append(_Leaf(text[start:].encode()))
    return out


def _array(text: str, i: int) -> tuple[_Node, int]:
    first = _skip(text, i + 1)
    chain: _Node = _Leaf(text[i:first].encode())
    if text[first] == "]":
        return _Concat((chain, _Leaf(b"]"))), first + 1
    piece_start, pos = first, first
    while True:
        _, end = _decoder.raw_decode(text, pos)
        chain = _Concat((chain, _Leaf(text[piece_start:end].encode())))
        after = _skip(text, end)
        if text[after] == "]":
            return _Concat((chain, _Leaf(text[end : after + 1].encode()))), after + 1
        if text[after] != ",":
            raise ValueError("no comma in array")
        piece_start, pos = end, _skip(text, after + 1)


class _Reference:
    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.known: set[bytes] = set()

    def add_body(self, body: bytes) -> str:
        return self._add(_cut(body)).hex()

    def _add(self, node: _Node) -> bytes:
        if isinstance(node, _Leaf):
            digest = hashlib.sha256(b"b" + node.data).digest()
            if digest not in self.known:
                packed = zlib.compress(node.data, 6) if len(node.data) >= 64 else b""
                if packed and len(packed) < len(node.data):
                    self._frame(digest, "b", "zlib", packed)
                else:
                    self._frame(digest, "b", None, node.data)
            return digest
        children = [self._add(child) for child in node.children]
        digest = hashlib.sha256(b"c" + b"".join(children)).digest()
        if digest not in self.known:
            self._frame(digest, "c", None, b"".join(children))
        return digest

    def _frame(self, digest: bytes, kind: str, codec: str | None, payload: bytes) -> None:
        header = {"h": digest.hex(), "k": kind, "z": codec, "n": len(payload)}
        self.out.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        self.out.write(payload + b"\n")
        self.known.add(digest)


# -- generated bodies -------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
# Scalars, numbers among them: a kept cut that ends on `1` must not resume a `12`.
_SCALAR = st.one_of(st.integers(-5, 5_000), st.sampled_from([0.5, True, False, None, 1e300]), _TEXT)


def _message(text: st.SearchStrategy[str]) -> st.SearchStrategy[object]:
    return st.one_of(
        _SCALAR,
        st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text}),
        st.lists(_SCALAR, max_size=3),
    )


# Long enough that arrays pass `Kept.KEY` and are kept (short ones never are).
_LONG = st.builds(lambda t, n: t * n, _TEXT, st.integers(0, 40))
_SPACE = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def _bodies(draw: st.DrawFn) -> list[bytes]:
    """Conversations taking turns, each body its transcript so far; now and then a
    history edited, spaced otherwise, cut short or not JSON at all."""
    conversations = [
        draw(st.lists(_message(_LONG), min_size=1, max_size=8))
        for _ in range(draw(st.integers(1, 3)))
    ]
    tools = draw(st.lists(_message(_LONG), max_size=3))
    turns = [0] * len(conversations)
    out = []
    for _ in range(draw(st.integers(1, 14))):
        c = draw(st.integers(0, len(conversations) - 1))
        turns[c] = min(turns[c] + draw(st.integers(0, 2)), len(conversations[c]))
        messages = list(conversations[c][: turns[c]])
        if messages and draw(st.booleans()) and draw(st.booleans()):
            messages[draw(st.integers(0, len(messages) - 1))] = draw(_message(_LONG))
        edit = draw(st.integers(0, 5)) == 0  # one character of the history changed
        space = draw(_SPACE)
        body = (
            json.dumps(
                {"model": "m", "tools": tools, "messages": messages, "stream": True},
                ensure_ascii=draw(st.booleans()),
                separators=(",", ":") if not space else (f",{space}", ": "),
            )
            .replace("[", "[" + space)
            .replace("]", space + "]")
            .encode()
        )
        if edit and len(body) > 2:
            at = draw(st.integers(1, len(body) - 2))
            body = body[:at] + (b"Y" if body[at : at + 1] != b"Y" else b"Z") + body[at + 1 :]
        kind = draw(st.integers(0, 20))
        if kind == 0:
            body = body[: draw(st.integers(0, len(body)))]  # cut short
        elif kind == 1:
            body = body + b"\xff"  # not UTF-8
        elif kind == 2:
            body = body[:-1] + b" }"  # trailing space inside
        out.append(body)
    return out


def _write(bodies: list[bytes]) -> tuple[bytes, list[str], bytes, list[str]]:
    new, reference = io.BytesIO(), _Reference()
    writer = BlobWriter(new)
    roots = [writer.add_body(b) for b in bodies]
    expected = [reference.add_body(b) for b in bodies]
    return new.getvalue(), roots, reference.out.getvalue(), expected


@FUZZ
@given(_bodies())
def test_the_file_is_the_reference_cuts(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[bytes]
) -> None:
    written, roots, expected_file, expected_roots = _write(bodies)
    assert roots == expected_roots
    assert written == expected_file
    path = tmp_path_factory.mktemp("blobs") / "contexts.blobs"
    path.write_bytes(written)
    with BlobStore(path) as store:
        assert [store.body(r) for r in roots] == bodies
    with BlobStore(path, cache_bytes=0) as store:  # nothing kept: every node read again
        assert [store.body(r) for r in reversed(roots)] == bodies[::-1]


def _conversation(n: int, last: str = "") -> bytes:
    messages = [{"role": "user", "content": f"turn {k} " + "x" * 300} for k in range(n)]
    body = json.dumps({"model": "m", "messages": messages}, separators=(",", ":"))
    return (body[:-2] + last + "]}").encode() if last else body.encode()


def test_a_growing_conversation_is_cut_from_its_kept_chain(tmp_path: Path) -> None:
    bodies = [_conversation(n) for n in range(1, 30)]
    written, roots, expected_file, expected_roots = _write(bodies)
    assert (roots, written) == (expected_roots, expected_file)
    # Each body after the first parses only its new message: the kept chain is resumed.
    # per body: `"m"`, then the one element its kept chain does not hold
    assert [len(parsed) for parsed in _parsed(bodies)] == [2] * len(bodies)


def _parsed(bodies: list[bytes]) -> list[list[str]]:
    """For each body stored in turn by one writer, the first characters of each value
    it parsed (`raw_decode`)."""
    calls: list[str] = []
    original = json.JSONDecoder.raw_decode

    def counting(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[object, int]:
        calls.append(s[idx : idx + 12])
        return original(self, s, idx)

    writer, out = BlobWriter(io.BytesIO()), []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json.JSONDecoder, "raw_decode", counting)
        for body in bodies:
            writer.add_body(body)
            out.append(list(calls))
            del calls[:]
    return out


def _marked(n: int, tail: str = "") -> bytes:
    """Claude Code's shape (2.1): the transcript second, the newest message's block
    marked `cache_control` (so the previous last message comes again without it)."""
    messages: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": f"turn {k} " + "x" * 300}]}
        for k in range(n)
    ]
    messages[-1] = {
        "role": "user",
        "content": [{"type": "text", "text": f"turn {n - 1} " + "x" * 300, "cache_control": {}}],
    }
    value = {"model": "m", "messages": messages, "system": "s" * 400, "max_tokens": 8}
    return json.dumps(value, separators=(",", ":")).encode()[:-1] + tail.encode() + b"}"


def test_a_transcript_whose_last_message_changed_resumes_before_it() -> None:
    bodies = [_marked(n) for n in range(1, 30)]
    # the same rest after the transcript, then another of the same length, then the first
    bodies += [_marked(30, ',"x":1'), _marked(31, ',"x":2'), _marked(32, ',"x":1')]
    written, roots, expected_file, expected_roots = _write(bodies)
    assert (roots, written) == (expected_roots, expected_file)
    for n, parsed in enumerate(_parsed(bodies), start=1):
        messages = [c for c in parsed if c.startswith('{"role"')]
        # the first body: its message; then the one sent again changed and the new one
        assert len(messages) == (1 if n == 1 else 2), (n, parsed)
        # The rest after the transcript (system prompt, settings) is parsed when it is
        # new only: the model before the transcript is parsed every time.
        rest = [c for c in parsed if not c.startswith(('{"role"', '"m"'))]
        assert len(rest) == (2 if n == 1 else 3 if n in (30, 31) else 0), (n, parsed)


def test_a_shared_run_is_found_wherever_it_ends() -> None:
    # Messages changed at every place of a kept transcript: each body resumes at the
    # last unchanged message (binary search), to the file a cut from the first byte makes.
    base = [{"role": "user", "content": f"turn {k} " + "x" * 300} for k in range(12)]

    def body(messages: list[dict[str, str]]) -> bytes:
        return json.dumps({"model": "m", "messages": messages}, separators=(",", ":")).encode()

    bodies = [body(base)]
    for at in range(12):
        changed = list(base)
        changed[at] = {"role": "user", "content": "changed " + "y" * 300}
        bodies += [body(changed[: at + 1] + base[at + 1 :]), body(base[: at + 1])]
    written, roots, expected_file, expected_roots = _write(bodies)
    assert (roots, written) == (expected_roots, expected_file)
    assert len(set(roots)) == len(bodies) - 1  # the last is the shortened base again
    writer = BlobWriter(io.BytesIO())
    writer.add_body(bodies[0])
    text = bodies[0].decode()
    i = text.index("[")
    for at in range(12):
        changed = body([*base[:at], {"role": "user", "content": "z" * 300}]).decode()
        shared = writer._shared(changed, i)
        assert (len(shared.ends) if shared else 0) == at


def test_a_resumed_array_not_followed_by_a_comma_is_not_cut() -> None:
    # The kept run ends where this text has a space then something that is no comma:
    # not JSON, so the body is one leaf (as a cut from the first byte finds).
    good = _conversation(4)
    bad = good[:-2] + b' x{"a":1}]}'
    written, roots, expected_file, expected_roots = _write([good, bad])
    assert (roots, written) == (expected_roots, expected_file)
    assert roots[1] == hashlib.sha256(b"b" + bad).hexdigest()


def test_a_body_resumes_after_its_kept_head() -> None:
    # System prompt and tools of harness size before the messages: after the first body
    # (kept to its tools, its first array with new elements), nothing before the
    # messages is parsed again; a head spaced otherwise is cut again, to the same file.
    head = {"model": "m", "system": "s" * 600, "tools": [{"name": f"t{k}"} for k in range(40)]}

    def body(n: int, colon: str = ":", system: str = "s") -> bytes:
        messages = [{"role": "user", "content": f"turn {k} " + "x" * 300} for k in range(n)]
        value = head | {"system": system * 600, "messages": messages}
        return json.dumps(value, separators=(",", colon), ensure_ascii=False).encode()

    bodies = [body(n) for n in range(1, 8)] + [body(8, ": "), body(9)]
    # A space where a kept head ends: the key's piece takes it, so no resuming there.
    bodies.append(body(10).replace(b'"messages":[', b'"messages": ['))
    # A head of non-ASCII text: its offsets in characters are not its bytes'.
    bodies += [body(n, system="é") for n in range(1, 5)]
    written, roots, expected_file, expected_roots = _write(bodies)
    assert (roots, written) == (expected_roots, expected_file)
    for n, parsed in enumerate(_parsed([body(n) for n in range(1, 8)]), start=1):
        parsed_head = [c for c in parsed if not c.startswith('{"role"')]
        assert (len(parsed_head) == 0) == (n > 1), (n, parsed)


@pytest.mark.parametrize("number", ["12", "1.5", "1e3", "10", "1 ", "1"])
def test_a_kept_cut_ending_in_a_number_is_not_resumed_inside_one(number: str) -> None:
    # The first body's array ends in `1`; the second's may continue that number.
    bodies = [_conversation(3, last=",1"), _conversation(3, last="," + number)]
    written, roots, expected_file, expected_roots = _write(bodies)
    assert (roots, written) == (expected_roots, expected_file)


def test_an_edited_history_of_the_same_length_is_cut_again() -> None:
    # Same first characters, same length, one character changed inside a kept chain.
    before = _conversation(5)
    after = before.replace(b"turn 3 x", b"turn 3 Y")
    assert len(after) == len(before) and after != before
    written, roots, expected_file, expected_roots = _write([before, after, before])
    assert (roots, written) == (expected_roots, expected_file)
    assert roots[0] == roots[2] != roots[1]


def test_a_body_that_does_not_cut_writes_none_of_its_pieces() -> None:
    good = _conversation(4)
    torn = good[:-30]  # an unfinished last message: every earlier piece was cut
    written, roots, expected_file, expected_roots = _write([torn, good])
    assert (roots, written) == (expected_roots, expected_file)
    out = io.BytesIO()
    BlobWriter(out).add_body(torn)
    assert out.getvalue().count(b'"k":') == 1  # the body as one leaf, nothing else


def test_a_body_nested_past_the_parsers_depth_is_one_leaf() -> None:
    deep = b'{"messages":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    out = io.BytesIO()
    root = BlobWriter(out).add_body(deep)
    assert root == hashlib.sha256(b"b" + deep).hexdigest()


def test_the_kept_chains_are_bounded() -> None:
    chains = Kept[str, tuple[bytes, ...]]()
    for n in range(200):
        chains.keep(f"[{n:04d}" + "y" * 1000, (bytes(32),))
    assert len(chains._by_key) == Kept.KEYS
    big = Kept[str, tuple[bytes, ...]]()
    for n in range(8):  # wide characters: 4 bytes each in memory
        big.keep(f"[{n:04d}" + "\U0001f600" * (5 << 20), (bytes(32),))
    assert 0 < big._bytes <= Kept.BYTES
    assert sum(sys.getsizeof(p) for kept in big._by_key.values() for p, _ in kept) == big._bytes
    # A cut's own size counts too: many small elements are bounded like a long text.
    sized = Kept[str, tuple[bytes, ...]](lambda cut: 100_000 * len(cut))
    for n in range(8):
        sized.keep(f"[{n:04d}" + "y" * 1000, tuple(bytes(32) for _ in range(100)))
    assert 0 < sized._bytes <= Kept.BYTES
    assert len(sized._by_key) < 8
    # A chain that extends a kept one replaces it.
    one = Kept[str, tuple[bytes, ...]]()
    one.keep("[" + "a" * 300, (b"1" * 32,))
    one.keep("[" + "a" * 400, (b"2" * 32,))
    assert [d for _, d in one._by_key["[" + "a" * 255]] == [(b"2" * 32,)]


def test_a_long_chain_is_rebuilt_without_recursion(tmp_path: Path) -> None:
    body = json.dumps({"messages": list(range(20_000))}).encode()
    path = tmp_path / "contexts.blobs"
    with path.open("wb") as fh:
        root = BlobWriter(fh).add_body(body)
    with BlobStore(path) as store:
        assert store.body(root) == body


def test_a_body_is_rebuilt_from_the_nodes_an_earlier_one_rebuilt(tmp_path: Path) -> None:
    bodies = [_conversation(n) for n in range(1, 12)]
    path = tmp_path / "contexts.blobs"
    with path.open("wb") as fh:
        writer = BlobWriter(fh)
        roots = [writer.add_body(b) for b in bodies]
    with BlobStore(path) as store:
        reads = []
        original = store._node
        store._node = lambda digest: reads.append(digest) or original(digest)  # type: ignore[method-assign]
        assert [store.body(r) for r in roots] == bodies
    # After the first body, each reads its root, its array and chain nodes and the one
    # new message's leaf, never the earlier messages again.
    assert len(reads) < 3 * len(bodies) + 20


def _store_file(tmp_path: Path) -> tuple[Path, bytes, str]:
    body = _conversation(3)
    path = tmp_path / "contexts.blobs"
    with path.open("wb") as fh:
        root = BlobWriter(fh).add_body(body)
    return path, body, root


def test_a_header_in_any_json_form_is_read(tmp_path: Path) -> None:
    # Spaces, keys in another order, a compressed leaf and a node: read by JSON.
    text, packed = b"plain", zlib.compress(b"x" * 100, 6)
    leaves = [hashlib.sha256(b"b" + text).digest(), hashlib.sha256(b"b" + b"x" * 100).digest()]
    node = hashlib.sha256(b"c" + b"".join(leaves)).digest()
    frames = [(leaves[0], "b", None, text), (leaves[1], "b", "zlib", packed)]
    frames.append((node, "c", None, b"".join(leaves)))
    path = tmp_path / "contexts.blobs"
    with path.open("wb") as fh:
        for digest, kind, codec, payload in frames:
            header = {"n": len(payload), "z": codec, "k": kind, "h": digest.hex()}
            fh.write(json.dumps(header).encode() + b"\n" + payload + b"\n")
    with BlobStore(path) as store:
        assert store.body(node.hex()) == b"plain" + b"x" * 100


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data + b"{", "corrupt frame header"),
        (lambda data: data + b'{"h":"zz","k":"b","z":null,"n":0}\n\n', "corrupt frame header"),
        (lambda data: data + b'["h"]\n', "corrupt frame header"),
        (lambda data: data[:-2], "torn frame"),
        (lambda data: data.replace(b'"n":', b'"n":9', 1), "torn frame"),
    ],
)
def test_a_damaged_frame_is_a_blob_error(tmp_path: Path, damage: object, message: str) -> None:
    path, _, _ = _store_file(tmp_path)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    descriptors = len(os.listdir("/proc/self/fd"))
    with pytest.raises(BlobError, match=message):
        BlobStore(path)
    assert len(os.listdir("/proc/self/fd")) == descriptors  # the file is closed again


def test_an_empty_store_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "contexts.blobs"
    path.write_bytes(b"")
    with BlobStore(path) as store, pytest.raises(BlobError, match="no node"):
        store.body("00" * 32)


def test_a_node_of_an_unknown_codec_fails_when_read(tmp_path: Path) -> None:
    data = b"payload"
    digest = hashlib.sha256(b"b" + data).digest()
    header = {"h": digest.hex(), "k": "b", "z": "zstd", "n": len(data)}
    path = tmp_path / "contexts.blobs"
    path.write_bytes(json.dumps(header).encode() + b"\n" + data + b"\n")
    with BlobStore(path) as store, pytest.raises(BlobError, match="unknown codec"):
        store.body(digest.hex())


def test_the_index_is_small_per_node(tmp_path: Path) -> None:
    # ~45 bytes a node: a 100k-call capture's ~570k nodes in ~26 MB (a dict: ~70, ~300).
    path = tmp_path / "contexts.blobs"
    with path.open("wb") as fh:
        writer = BlobWriter(fh)
        roots = [writer.add_body(b"body %d" % n) for n in range(20_000)]
    tracemalloc.start()
    try:
        store = BlobStore(path)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    with store:
        assert held / len(roots) < 60, held / len(roots)
        assert store.body(roots[12_345]) == b"body 12345"

"""What the gateway reads of a request body: its JSON, as far as the rules that read it go.

`RequestBody()`; `bodies.read(body, harness)` is the body's parsed JSON, or None when it
is empty or not JSON Python can read (the identity rules then see no body; the bytes are
on the tape either way). Only two readers use it, the identity rules of the credential's
declared harness (`roller.harnesses.identify`, at the paths its profile declares:
`WireProfile.body_paths`) and the requested model (its `model` member), so where the
profile declares its paths the answer holds only those top-level members: a 32 KiB
harness turn's messages and tools are parsed, never built into Python objects.

Facts relied on (`tests/gateway/test_request_body.py` checks the parsers differentially;
`tests/gateway/test_identities.py` that a body cut to the declared paths derives the
same identity):
- The identity rules read a body only through `dig` at their declared paths
  (`roller.identity.memo`), and the model is read only at `model`: a body holding just
  the members those paths start with derives the same identity and the same model.
- The members are read by msgspec's JSON decoder into a struct of those keys (every
  value `Any`, absent ones `UNSET`), which skips every other member without building
  it. It parses a document only where the standard library's decoder parses it too,
  with the same values, the last of duplicate keys winning, and refuses some the
  decoder takes (NaN and Infinity, lone surrogate escapes, a number out of a float's
  range, nesting past the interpreter's recursion limit, a BOM) — but for two
  leniencies in what it skips: a string is not checked for valid UTF-8, and an integer
  is not held to Python's digit limit (`sys.get_int_max_str_digits`, 4,300). So a body
  is read this way only when it is ASCII or decodes as the standard library decodes it
  (UTF-8, surrogates passed), and holds no run of digits past the limit (`_long_digits`:
  a byte sampled every half limit, so such a run holds two adjacent samples, and only
  a stretch of digits between two is looked at); a refusal, or a body that is not an
  object, falls back to `parse_json_body`, the full parse. Measured (docs/benchmarks.md,
  one core): 18 µs for a 32 KiB body of one long message, where pydantic-core's parse
  of the same members took 27 and orjson's whole parse 53; the decoder alone 30 µs for
  44 KiB of 40 messages, where both took ~117.
- A profile that does not declare its paths, or declares the whole body (an empty
  path), gets the full parse.
Rules kept: the members follow the harness registry as it is now (a harness registered
later is seen); one reader per distinct set of members.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import msgspec
import orjson

from roller.harnesses import registry
from roller.harnesses.registry import Registry

MODEL: Final = "model"
_DIGIT_MARKS: Final = bytes(ord("d") if 0x30 <= i <= 0x39 else ord(".") for i in range(256))


def parse_json_body(body: bytes) -> object:
    """The parsed request body, or None when it is empty or not JSON Python can read
    (nested too deeply, an integer past the digit limit).

    orjson first (about half the CPU on a 32 KiB harness turn), the standard library for
    whatever orjson refuses (NaN, Infinity, lone surrogates, deep nesting), so what is
    accepted is what `json.loads` accepts. Where both parse, they differ only on an
    integer past 64 bits (orjson gives a float): the identity rules and the model read
    strings and objects only, so they give the same answer either way."""
    if not body or body[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _long_digits(body: bytes) -> bool:
    """Whether `body` may hold a run of digits past Python's integer digit limit: True
    for any such run (and, rarely, for a shorter one past half the limit)."""
    limit = sys.get_int_max_str_digits()
    if not limit or len(body) <= limit:
        return False
    # A run of limit + 1 digits covers two adjacent multiples of `stride`.
    stride = (limit + 1) // 2
    marks = body[::stride].translate(_DIGIT_MARKS)
    at = marks.find(b"dd")
    while at >= 0:
        if body[at * stride : (at + 1) * stride + 1].isdigit():
            return True
        at = marks.find(b"dd", at + 1)
    return False


class Members:
    """A reader of a body's top-level members `names`: `read(body)` is a dict of those
    present, or None when the decoder refuses the body (the caller parses it whole)."""

    def __init__(self, names: frozenset[str]) -> None:
        # Field names are positional: a member's name need not be a Python identifier.
        fields = [(f"m{i}", Any, msgspec.UNSET) for i in range(len(names))]
        rename = {f"m{i}": name for i, name in enumerate(sorted(names))}
        shape = msgspec.defstruct("Members", fields, rename=rename)
        self._decoder = msgspec.json.Decoder(shape)
        self._names = tuple(rename.items())

    def read(self, body: bytes) -> dict[str, Any] | None:
        if not body.isascii():
            try:  # the decoder does not check what it skips for valid UTF-8
                body.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                return None
        if _long_digits(body):  # nor hold an integer it skips to Python's digit limit
            return None
        try:
            decoded = self._decoder.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return None
        read = {}
        for field, name in self._names:
            value = getattr(decoded, field)
            if value is not msgspec.UNSET:
                read[name] = value
        return read


class RequestBody:
    """The request bodies of one gateway, read per the credential's declared harness."""

    def __init__(self) -> None:
        self._registry: Registry | None = None
        # harness -> its members' reader (None: the whole body is parsed)
        self._readers: dict[str, Members | None] = {}
        self._members: dict[frozenset[str], Members] = {}

    def read(self, body: bytes, harness: str) -> object:
        """The body as the rules of `harness` and the model read it (module docstring)."""
        if not body or body[:1] not in (b"{", b"["):
            return None
        reader = self._reader(harness)
        if reader is not None and body[:1] == b"{":
            read = reader.read(body)
            if read is not None:
                return read
            # not one the parsers read alike: the full parse decides
        return parse_json_body(body)

    def _reader(self, harness: str) -> Members | None:
        current = registry()
        if current is not self._registry:  # a harness was registered or removed
            self._registry = current
            self._readers.clear()
        if harness in self._readers:
            return self._readers[harness]
        paths = current.wire(harness).body_paths()
        reader = None
        if paths is not None and all(paths):
            members = frozenset({MODEL, *(path[0] for path in paths)})
            reader = self._members.get(members)
            if reader is None:
                reader = self._members[members] = Members(members)
        self._readers[harness] = reader
        return reader

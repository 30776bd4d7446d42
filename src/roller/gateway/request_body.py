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
- The members are read by pydantic-core's JSON parser (a `TypeAdapter` over a TypedDict
  of those keys, every value `Any`), which parses a document only where the standard
  library's decoder parses it too, with the same values, the last of duplicate keys
  winning, and refuses some the decoder takes (lone surrogates, nesting past ~250
  levels, a BOM); a refusal, or a body that is not an object, falls back to
  `parse_json_body`, the full parse. Measured: ~0.26 M instructions at 32 KiB, where
  orjson's whole parse and its freeing take ~0.48 M.
- A profile that does not declare its paths, or declares the whole body (an empty
  path), gets the full parse.
Rules kept: the members follow the harness registry as it is now (a harness registered
later is seen); one adapter per distinct set of members.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic's, before Python 3.12

from roller.harnesses import registry
from roller.harnesses.registry import Registry

MODEL: Final = "model"


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


class RequestBody:
    """The request bodies of one gateway, read per the credential's declared harness."""

    def __init__(self) -> None:
        self._registry: Registry | None = None
        # harness -> its members' reader (None: the whole body is parsed)
        self._readers: dict[str, TypeAdapter[Any] | None] = {}
        self._adapters: dict[frozenset[str], TypeAdapter[Any]] = {}

    def read(self, body: bytes, harness: str) -> object:
        """The body as the rules of `harness` and the model read it (module docstring)."""
        if not body or body[:1] not in (b"{", b"["):
            return None
        reader = self._reader(harness)
        if reader is not None and body[:1] == b"{":
            try:
                return reader.validate_json(body)
            except ValidationError:
                pass  # not one the parsers read alike: the full parse decides
        return parse_json_body(body)

    def _reader(self, harness: str) -> TypeAdapter[Any] | None:
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
            reader = self._adapters.get(members)
            if reader is None:
                shape = TypedDict("Members", dict.fromkeys(sorted(members), Any), total=False)  # type: ignore[misc]
                reader = self._adapters[members] = TypeAdapter(shape)
        self._readers[harness] = reader
        return reader

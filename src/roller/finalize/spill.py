"""Decoded calls between finalize's two passes, kept on disk instead of in memory.

The first pass decodes each exchange once (the costly part: parsing the request and
reassembling the response) and keeps only its `CallFacts` in memory; what assembly
needs besides is put here, one entry per call in arrival order: the call's shell record
(`roller.finalize.shell.shell_json`: `call_shell` serialized with `context: null`) and the
context's record JSON (`DecodedCall.context_json`, made once while decoding) — unless
that is the request body itself, as harnesses sending compact JSON make it, which the
second pass reads back from the tape instead. Serialized records, not pickles: the second pass
completes a shell's JSON in place (`roller.finalize.decided`), reading no record back;
per call, the two shell facts it needs besides (`context_sha256`, whether the response
has a body) stay in memory. Entries
are read back by position (`get(i)`). An anonymous temporary file: nothing is left
behind, whatever happens.
"""

from __future__ import annotations

import tempfile
from array import array
from pathlib import Path
from typing import IO

# per call, how its context is held: no context, the request body's bytes, or spilled
_NONE, _BODY, _SPILLED = 0, 1, 2


def held_context(body: bytes, ctx: bytes | None) -> tuple[int, bytes | None]:
    """How a call's context is held (none, the request body's bytes, or spilled) and the
    bytes to spill (only when spilled): `body` is its request body, `ctx` its context's
    record JSON (None without one)."""
    if ctx is None:
        return _NONE, None
    if ctx == body:
        return _BODY, None
    return _SPILLED, ctx


class Spill:
    def __init__(self, directory: Path) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self._offsets = array("q", [0])  # per call: shell start, context start; then the end
        self._context = bytearray()
        self._raw_body = bytearray()  # per call: whether its response has a body
        self._digests = bytearray()  # per call: its shell's `context_sha256`, 32 bytes

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def put(
        self, shell: bytes, context_sha256: str, raw_body: bool, body: bytes, ctx: bytes | None
    ) -> None:
        """Set call `len(self)`'s shell JSON (`context: null`) aside, with its
        `context_sha256` and whether its response has a body (its `raw_sha256` is set);
        `body` is its request body, `ctx` its context's record JSON (None without one)."""
        self.put_entry(shell, context_sha256, raw_body, *held_context(body, ctx))

    def put_entry(
        self, shell: bytes, context_sha256: str, raw_body: bool, how: int, ctx: bytes | None
    ) -> None:
        """`put`, its context already judged by `held_context` (how, and the bytes to
        spill: None unless spilled)."""
        self._digests += bytes.fromhex(context_sha256)
        self._raw_body.append(raw_body)
        self._file.seek(self._offsets[-1])
        self._file.write(shell)
        self._offsets.append(self._offsets[-1] + len(shell))
        self._context.append(how)
        if ctx is not None:
            self._file.write(ctx)
        self._offsets.append(self._file.tell())

    def context_sha256(self, i: int) -> str:
        """Call i's `context_sha256` (hex), as its shell has it."""
        return self._digests[32 * i : 32 * i + 32].hex()

    def context_is_body(self, i: int) -> bool:
        """Whether call i's context JSON is its request body, byte for byte."""
        return self._context[i] == _BODY

    def __len__(self) -> int:
        return len(self._context)

    def has_raw_body(self, i: int) -> bool:
        """Whether call i's response has a body (its shell's `raw_sha256` is set)."""
        return bool(self._raw_body[i])

    def get(self, i: int, body: bytes) -> tuple[bytes, bytes | None]:
        """Call i's shell JSON (context null) and its context JSON; `body` is its
        request body."""
        start, middle, stop = self._offsets[2 * i : 2 * i + 3]
        self._file.seek(start)
        data = self._file.read(stop - start)
        how = self._context[i]
        shell = data[: middle - start]
        return shell, (None if how == _NONE else body if how == _BODY else data[middle - start :])

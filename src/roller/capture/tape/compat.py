"""Reading tapes written by older rollers: one converter per tape version, in a chain.

The shape of mitmproxy's `io/compat.py`. Rules this module keeps:
- A segment's `seg` frame says which version wrote its frames (`v`). A frame header of
  version `v` (its `meta` included) goes through `CONVERTERS[v]`, then `CONVERTERS[v+1]`,
  … until it has the shape of `TAPE_VERSION`; only then is it typed (`meta`). Each
  converter turns one frame header of its version into one of the next and is pure; on
  a frame it cannot convert it raises `LookupError`, `TypeError` or `ValueError`, which
  the reader reports for that frame alone.
- A version is readable when it is `TAPE_VERSION` or has an unbroken chain to it. A newer
  version, or one never issued, is not read: its segment is reported, not guessed at.
- What needs no new version: a meta key readers can default when it is missing (the
  typed records default missing keys and keep unknown ones). What does: a key whose
  meaning or shape changes, a key renamed or removed, a change of framing. Such a change
  bumps `TAPE_VERSION` and adds its converter here, with a test that reads a tape of the
  old version (tests/capture/test_tape_compat.py).
- Version 2 added the `bref` frame kind (a request body stored in the capture): a
  version 1 frame is a version 2 frame as it is, so its converter is the identity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from roller.capture.tape.format import TAPE_VERSION

JSONObject = dict[str, Any]
Converter = Callable[[JSONObject], JSONObject]


def _v1_to_v2(header: JSONObject) -> JSONObject:
    return header


# version v -> the converter from v to v + 1.
CONVERTERS: Mapping[int, Converter] = {1: _v1_to_v2}


def readable(version: int | None) -> bool:
    """Whether frames of `version` can be read (as they are, or through the chain)."""
    if version is None or version > TAPE_VERSION:
        return False
    return all(v in CONVERTERS for v in range(version, TAPE_VERSION))


def upgrade(header: JSONObject, version: int) -> JSONObject:
    """A frame header of a readable `version` in the shape of `TAPE_VERSION`."""
    for v in range(version, TAPE_VERSION):
        header = CONVERTERS[v](header)
    return header

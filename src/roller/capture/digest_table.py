"""Digests held in flat arrays: the compact/v3 blob reader's node index.

`DigestMap(width, fields)` maps digests (by their first `width` bytes) each to a fixed
number of unsigned 64-bit integers (`get` gives None for one it does not hold; a digest
put again takes its new values). The keys live back to back in one `bytearray`, the
values in an `array("Q")`, and an open-addressing table of 32-bit positions into them
(linear probing, at most half full, slots chosen by the key's `hash`) finds a key: ~45
bytes a 16-byte key with two values, where a `dict` from an integer prefix to one packed
integer took ~126 (a 100k-call capture has ~570k nodes).

An added key is appended at once and placed in the table by the next lookup, with every
key added since, in one loop (a blob file's index is built by a scan of the whole file
before its first lookup): an addition costs about what a `dict`'s does, a lookup ~1 µs
more (a few Python operations): `roller validate` of a 100k-call compact/v3 capture
peaks at 101 MB instead of 148 and takes ~2% longer (docs/benchmarks.md, round 12). The
blob writer keeps a Python `set`: it asks for every node it hashes, where that ~1 µs
made finalize 3-4% slower. A key put again is appended again and, once placed,
takes the slot of the earlier one (the later values win, as in a `dict`); the earlier
copy stays in the arrays unused (the blob writer never writes a digest twice).
"""

from __future__ import annotations

from array import array
from typing import Final

_EMPTY: Final = 0  # a slot holds position + 1
_MIN_SLOTS: Final = 1 << 10
_SLOT: Final = "I"  # 32 bits: positions below 2**32 - 1


def _slots(size: int) -> array[int]:
    return array(_SLOT, bytes(array(_SLOT).itemsize * size))


class DigestMap:
    """Digests, each mapped to `fields` unsigned 64-bit integers (the last ones put)."""

    __slots__ = (
        "_count",
        "_held",
        "_keys",
        "_mask",
        "_pending",
        "_slots",
        "_values",
        "fields",
        "width",
    )

    def __init__(self, width: int, fields: int = 1) -> None:
        self.width = width
        self.fields = fields
        self._keys = bytearray()
        self._values = array("Q")
        self._count = 0  # keys appended
        self._held = 0  # distinct keys among those placed
        # The hashes of the keys appended, not placed yet (8 bytes each, not an int object).
        self._pending = array("q")
        self._slots = _slots(_MIN_SLOTS)
        self._mask = _MIN_SLOTS - 1

    def __len__(self) -> int:
        self._place_pending()
        return self._held

    def get(self, digest: bytes) -> tuple[int, ...] | None:
        """The digest's values, or None when it is not held."""
        key = digest[: self.width]
        position = self._position(key) if len(key) == self.width else -1
        if position < 0:
            return None
        start = position * self.fields
        return tuple(self._values[start : start + self.fields])

    def put(self, digest: bytes, values: tuple[int, ...]) -> None:
        key = digest[: self.width]  # (the digest itself when it is as wide: no copy)
        if len(key) != self.width:
            raise ValueError(f"a digest of {len(digest)} bytes, not {self.width} or more")
        if len(values) != self.fields:
            raise ValueError(f"{len(values)} values where the map holds {self.fields}")
        packed = array("Q", values)  # (one out of range fails here, before the key is in)
        self._keys += key
        self._values += packed
        self._count += 1
        self._pending.append(hash(key))

    def _position(self, key: bytes) -> int:
        """The key's position in the key array, or -1 (`key`: exactly `width` bytes)."""
        if self._pending:
            self._place_pending()
        width, keys, slots, mask = self.width, self._keys, self._slots, self._mask
        slot = hash(key) & mask
        while (held := slots[slot]) != _EMPTY:
            if keys.startswith(key, (held - 1) * width):
                return held - 1
            slot = (slot + 1) & mask
        return -1

    def _place_pending(self) -> None:
        """Place the keys appended since the last lookup (the table grown first, when
        they would fill it past half: every key placed again)."""
        pending, first = self._pending, self._count - len(self._pending)
        self._pending = array("q")
        if self._count * 2 > len(self._slots):
            size = len(self._slots)
            while self._count * 2 > size:
                size *= 2
            self._slots, self._mask, self._held = _slots(size), size - 1, 0
            keys, width = bytes(self._keys), self.width  # (its slices are `bytes`)
            hashes = array("q", (hash(keys[p * width : (p + 1) * width]) for p in range(first)))
            hashes += pending
            self._place(0, hashes)
        else:
            self._place(first, pending)

    def _place(self, first: int, hashes: array[int]) -> None:
        """Place the keys from position `first` on, whose hashes are `hashes`."""
        width, keys, slots, mask = self.width, self._keys, self._slots, self._mask
        held = self._held
        for position, key_hash in enumerate(hashes, first):
            start = position * width
            slot = key_hash & mask
            while (other := slots[slot]) != _EMPTY:
                if keys[start : start + width] == keys[(other - 1) * width : other * width]:
                    break  # the same key again: the later one takes its slot
                slot = (slot + 1) & mask
            else:
                held += 1
            slots[slot] = position + 1
        self._held = held

"""roller.capture.digest_table: a flat-array digest map, against Python's `dict`."""

from __future__ import annotations

import hashlib
import random
import tracemalloc

import pytest

from roller.capture.digest_table import DigestMap


def _digests(n: int, salt: bytes = b"") -> list[bytes]:
    return [hashlib.sha256(salt + b"%d" % i).digest() for i in range(n)]


def test_a_map_holds_what_a_dict_holds_through_its_growth() -> None:
    held, absent = _digests(20_000), _digests(5_000, b"absent")
    table, oracle = DigestMap(32), {}
    for n, digest in enumerate(held):
        table.put(digest, (n,))
        oracle[digest] = (n,)
        if n % 997 == 0:  # put again: the later value wins, nothing is added
            table.put(digest, (n + 1,))
            oracle[digest] = (n + 1,)
        if n in (1, 511, 512, 4_096, 10_000):  # lookups across growths
            assert all(table.get(d) == oracle[d] for d in held[: n + 1])
    assert len(table) == len(oracle) == 20_000
    assert all(table.get(d) == oracle[d] for d in held)
    assert not any(table.get(d) is not None for d in absent)


def test_keys_are_the_leading_bytes() -> None:
    table = DigestMap(16)
    digest = hashlib.sha256(b"x").digest()
    table.put(digest, (7,))
    assert table.get(digest) == (7,)
    assert table.get(digest[:16]) == (7,)  # the key itself
    assert table.get(digest[:16] + b"\0" * 16) == (7,)  # same leading bytes: the same key
    assert table.get(digest[:15]) is None  # shorter than a key: never held
    assert table.get(bytes(16)) is None
    with pytest.raises(ValueError, match="15 bytes"):
        table.put(digest[:15], (1,))


def test_keys_sharing_slots_are_told_apart() -> None:
    # Many keys into few slots at first: probing runs long, past the table's end.
    rng = random.Random(7)
    keys = [rng.randbytes(8) for _ in range(3_000)]
    table = DigestMap(8)
    for n, key in enumerate(keys):
        table.put(key, (n,))
    assert len(table) == len(set(keys))
    assert all(table.get(k) == (max(n for n, o in enumerate(keys) if o == k),) for k in keys[:50])
    assert all(table.get(k) is not None for k in keys)
    assert sum(table.get(rng.randbytes(8)) is not None for _ in range(3_000)) == 0


def test_random_puts_and_overwrites_give_what_a_dict_gives() -> None:
    rng = random.Random(11)
    digests = _digests(8_000)
    table, oracle = DigestMap(16, 2), {}
    for _ in range(20_000):  # puts and overwrites in a random order
        digest = rng.choice(digests)
        values = (rng.getrandbits(64), rng.getrandbits(43))
        table.put(digest, values)
        oracle[digest[:16]] = values
    assert len(table) == len(oracle)
    for digest in digests:
        assert table.get(digest) == oracle.get(digest[:16])
    assert table.get(hashlib.sha256(b"none").digest()) is None
    with pytest.raises(ValueError, match="1 values where the map holds 2"):
        table.put(digests[0], (1,))
    fresh = hashlib.sha256(b"fresh").digest()
    for digest in (digests[1], fresh):  # held, and not: neither changes
        with pytest.raises(OverflowError):
            table.put(digest, (1 << 64, 0))
        assert table.get(digest) == oracle.get(digest[:16])
    table.put(fresh, (1, 2))
    assert table.get(fresh) == (1, 2) and table.get(digests[1]) == oracle[digests[1][:16]]


def test_a_digest_costs_tens_of_bytes() -> None:
    # A dict from an integer prefix to a packed integer took ~126 bytes a digest: the
    # blob reader's index holds ~570k digests for a 100k-call capture.
    digests = _digests(100_000)
    tracemalloc.start()
    try:
        index = DigestMap(16, 2)
        for n, digest in enumerate(digests):
            index.put(digest, (n, n))
        assert index.get(digests[0]) == (0, 0)  # (every key placed)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(digests) < 60, held / len(digests)

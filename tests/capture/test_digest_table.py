"""roller.capture.digest_table: flat-array digest sets and maps, against Python's own."""

from __future__ import annotations

import hashlib
import random
import tracemalloc

import pytest

from roller.capture.digest_table import DigestMap, DigestSet


def _digests(n: int, salt: bytes = b"") -> list[bytes]:
    return [hashlib.sha256(salt + b"%d" % i).digest() for i in range(n)]


def test_a_set_holds_what_a_python_set_holds_through_its_growth() -> None:
    held, absent = _digests(20_000), _digests(5_000, b"absent")
    table, oracle = DigestSet(32), set()
    for n, digest in enumerate(held):
        table.add(digest)
        oracle.add(digest)
        if n % 997 == 0:  # re-adding changes nothing
            table.add(digest)
        if n in (1, 511, 512, 4_096, 10_000):  # across growths
            assert all(d in table for d in held[: n + 1])
    assert len(table) == len(oracle) == 20_000
    assert all(d in table for d in held)
    assert not any(d in table for d in absent)


def test_keys_are_the_leading_bytes() -> None:
    table = DigestSet(16)
    digest = hashlib.sha256(b"x").digest()
    table.add(digest)
    assert digest in table
    assert digest[:16] in table  # the key itself
    assert digest[:16] + b"\0" * 16 in table  # same leading bytes: the same key
    assert digest[:15] not in table  # shorter than a key: never held
    assert bytes(16) not in table
    with pytest.raises(ValueError, match="15 bytes"):
        table.add(digest[:15])


def test_keys_sharing_slots_are_told_apart() -> None:
    # Many keys into few slots at first: probing runs long, past the table's end.
    rng = random.Random(7)
    keys = [rng.randbytes(8) for _ in range(3_000)]
    table = DigestSet(8)
    for key in keys:
        table.add(key)
    assert len(table) == len(set(keys))
    assert all(k in table for k in keys)
    assert sum(rng.randbytes(8) in table for _ in range(3_000)) == 0


def test_a_map_gives_what_a_dict_gives() -> None:
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
    with pytest.raises(TypeError, match="put"):  # a key without its values
        table.add(fresh)
    table.put(fresh, (1, 2))
    assert table.get(fresh) == (1, 2) and table.get(digests[1]) == oracle[digests[1][:16]]


def test_a_digest_costs_tens_of_bytes() -> None:
    # A set of 32-byte `bytes` took ~100 bytes a digest, a dict of integers ~126: the
    # tables hold ~570k digests for a 100k-call capture.
    digests = _digests(100_000)
    tracemalloc.start()
    try:
        table, index = DigestSet(32), DigestMap(16, 2)
        for n, digest in enumerate(digests):
            table.add(digest)
            index.put(digest, (n, n))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(digests) < 110, held / len(digests)  # both tables together

"""Row keys: a call row's id is a time-ordered UUIDv7, a session's a random UUIDv4."""

from __future__ import annotations

import os
import time
import uuid

from roller.gateway.store.ids import call_row_id, new_id


def test_a_call_row_id_is_a_version_7_uuid_carrying_its_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    ids = [call_row_id() for _ in range(2000)]
    after = time.time_ns() // 1_000_000
    for text in ids:
        u = uuid.UUID(text)
        assert str(u) == text  # canonical: lower-case hex, dashes in place
        assert u.version == 7
        assert u.variant == uuid.RFC_4122
        assert before <= u.int >> 80 <= after
    assert [i[:13] for i in ids] == sorted(i[:13] for i in ids)  # time-ordered


def test_call_row_ids_do_not_repeat() -> None:
    ids = [call_row_id() for _ in range(200_000)]
    assert len(set(ids)) == len(ids)


def test_a_forked_child_draws_other_random_bits() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its ids, then out
        os.close(read)
        os.write(write, "\n".join(call_row_id()[15:] for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    mine = {call_row_id()[15:] for _ in range(50)}
    with os.fdopen(read) as fh:
        theirs = set(fh.read().split("\n"))
    os.waitpid(pid, 0)
    assert len(theirs) == 50
    assert not mine & theirs


def test_a_session_id_is_random() -> None:
    assert {uuid.UUID(new_id()).version for _ in range(10)} == {4}

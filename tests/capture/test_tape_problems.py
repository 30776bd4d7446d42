"""A meta's wrong shapes are found when its exchange is loaded, yet reported in tape order,
among the framing problems, whatever was loaded and in whatever order."""

from __future__ import annotations

from pathlib import Path

from roller.capture.tape import TapeWriter, index_tape, read_tape
from roller.capture.tape.format import segment_name


def _tape(root: Path) -> tuple[str, str]:
    with TapeWriter(root, fsync_interval=None, segment_max_bytes=1) as tape:  # a segment each
        a = tape.begin()
        tape.request(a, {"method": "POST", "path": 7}, body=b"x")
        tape.response(a, {"status": "200"})
        tape.chunk(a, b"data")
        tape.end(a, {"outcome": "ok", "response_bytes": 5})  # 4 chunk bytes: a mismatch
        b = tape.begin()
        tape.request(b, {"method": "POST", "path": "/v1/messages", "annotations": []}, body=b"")
        tape.end(b, {"outcome": "ok", "client_status": "200"})
    fourth = sorted(root.iterdir())[3]  # a segment a frame each: after a's metas
    with fourth.open("ab") as fh:  # a frame of an exchange never begun
        fh.write(b'{"k":"chunk","x":"nobody","t":1,"n":0}\n\n')
    return a, b


def test_shape_problems_are_in_tape_order_whatever_was_loaded(tmp_path: Path) -> None:
    a, b = _tape(tmp_path)
    expected = read_tape(tmp_path).problems
    shapes = [p.split(": meta of ", 1)[1] for p in expected if ": meta of " in p]
    assert shapes == [
        f"{a}: 'path' has an unexpected shape (kept)",
        f"{a}: 'status' has an unexpected shape (kept)",
        f"{b}: 'annotations' has an unexpected shape (kept)",
        f"{b}: 'client_status' has an unexpected shape (kept)",
    ]
    nobody = next(i for i, p in enumerate(expected) if "unknown exchange nobody" in p)
    assert nobody == 2  # after a's two, before b's (a later segment)
    assert "chunk frames hold 4 bytes, its end frame says 5" in expected[-1]
    assert expected[0].startswith(segment_name(2))
    for order in ([], [1], [1, 0], [0, 1, 0]):
        with index_tape(tmp_path) as index:
            for i in order:
                index.load(index.exchanges[i])
            assert index.problems == expected
            assert index.problems == expected  # asked again: each reported once

"""`roller.capture.beside` in a fresh process, which runs no other thread (a pytest process
may: a fork is refused there). `python -m tests.capture.beside_probe CASE DIR` prints one
JSON object of what it saw; tests/capture/test_beside.py judges it.

- `writes`: a child writes DIR/beside.jsonl while this process writes DIR/here.jsonl from
  the same lines; both entries, and the files left in DIR.
- `fails`: the child's lines fail part-way; what `entry()` gives and the files left.
- `cancelled`: the child's lines never end; `cancel()` ends it; the files left, and
  whether the child is still there.
- `threaded`: another thread runs; what `start` gives.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from roller.capture.beside import WrittenBeside
from roller.capture.files import atomic_write_lines
from tests.support.lines import record_lines


def failing() -> Iterator[bytes]:
    yield from record_lines(2 << 20)
    raise RuntimeError("the lines could not be made")


def endless() -> Iterator[bytes]:
    yield from record_lines(1 << 20)
    while True:
        time.sleep(1)
        yield b""


def left(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def run(case: str, directory: Path) -> dict[str, object]:
    if case == "writes":
        beside = WrittenBeside.start(directory / "beside.jsonl", record_lines(3 << 20))
        assert beside is not None, "no child started"
        here = atomic_write_lines(directory / "here.jsonl", record_lines(3 << 20))
        there = beside.entry()
        beside.cancel()  # a no-op once waited for
        return {
            "here": here.model_dump(),
            "there": None if there is None else there.model_dump(),
            "left": left(directory),
        }
    if case == "fails":
        beside = WrittenBeside.start(directory / "beside.jsonl", failing())
        assert beside is not None, "no child started"
        return {"entry": beside.entry(), "left": left(directory)}
    if case == "cancelled":
        beside = WrittenBeside.start(directory / "beside.jsonl", endless())
        assert beside is not None, "no child started"
        pid = beside._pid
        assert pid is not None
        time.sleep(0.5)  # it is writing
        written = left(directory)
        beside.cancel()
        try:
            os.kill(pid, 0)
            still = True
        except ProcessLookupError:
            still = False
        return {"while": written, "left": left(directory), "still_there": still}
    if case == "threaded":
        release = threading.Event()
        other = threading.Thread(target=release.wait)
        other.start()
        try:
            started = WrittenBeside.start(directory / "beside.jsonl", record_lines(1000))
        finally:
            release.set()
            other.join()
        return {"started": started is not None, "left": left(directory)}
    raise SystemExit(f"unknown case {case!r}")


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], Path(sys.argv[2]))))

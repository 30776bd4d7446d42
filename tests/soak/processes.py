"""The soak suite's processes: the fault upstream, `roller proxy`, `roller gateway`.

Each runs as its own process on 127.0.0.1, as a user would run it, so a test can read
its resident memory from /proc, tell whether it died, `kill -9` it, and read every line
it logged. `Served.url` is what its first stdout line announced.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

ROOT: Final = Path(__file__).resolve().parents[2]
ROLLER: Final = str(Path(sys.executable).parent / "roller")


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    log: Path  # stdout and stderr, as written
    rss_kib: list[int] = field(default_factory=list)  # sampled by `sample_rss`

    def alive(self) -> bool:
        return self.process.poll() is None

    def rss(self) -> int:
        """Resident memory now, KiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        (line,) = [x for x in status.splitlines() if x.startswith("VmRSS:")]
        return int(line.split()[1])

    def stop(self, *, timeout: float = 30) -> int:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


def _pump(stream: IO[bytes], sink: IO[bytes]) -> None:
    for line in iter(stream.readline, b""):
        sink.write(line)
        sink.flush()


def serve(argv: Sequence[str], log: Path, *, env: dict[str, str] | None = None) -> Served:
    """Start `argv`, wait for its first line (the URL it listens on), keep logging."""
    sink = log.open("ab")
    process = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=sink,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    sink.write(first)
    if not first:
        process.wait(10)
        raise AssertionError(f"{argv[:3]} exited before listening: {log.read_text()[-2000:]}")
    url = first.decode().strip().rsplit(" ", 1)[-1]
    threading.Thread(target=_pump, args=(process.stdout, sink), daemon=True).start()
    return Served(process, url, log)


def upstream(key: str, log: Path) -> Served:
    return serve([sys.executable, "-m", "tests.soak.upstream", key], log)


def sample_rss(served: Served, stop: threading.Event, every: float = 0.5) -> threading.Thread:
    def run() -> None:
        while not stop.is_set() and served.alive():
            try:
                served.rss_kib.append(served.rss())
            except (OSError, ValueError):  # it ended after `alive` (gone, or a zombie: no VmRSS)
                return
            stop.wait(every)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def files_holding(root: Path, secrets: Sequence[str]) -> list[tuple[Path, str]]:
    """Every file under `root` that holds one of `secrets`, and which one."""
    found: list[tuple[Path, str]] = []
    needles = [(s, s.encode()) for s in secrets]
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found.extend((path, s) for s, b in needles if b in data)
    return found


def wait_until(check: object, timeout: float = 30.0) -> bool:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())

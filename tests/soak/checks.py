"""What a soak run must show, checked the same way for the proxy and the gateway.

- every request the clients sent is exactly one tape exchange (found by `x-soak-id`),
  ended, with an outcome its fault allows and the upstream status it must have; the
  tape has no other exchange and reads without problems;
- no secret on disk or in the process's log;
- resident memory flat and bounded: the load runs in two equal phases (`soak`); idle
  after the second, the process holds no more than idle after the first plus
  `RSS_SLACK_KIB` (the first phase is the warm-up: allocator arenas, connection pools,
  the heap 20 MB bodies leave behind), and it never exceeds `RSS_BOUND_KIB` however
  many 20 MB bodies were in flight;
- a summary of the figures (`Figures`) the suite prints for the closing report.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from roller.capture.tape import TapeExchange, TapeReadResult
from tests.soak.load import BY_NAME, LoadResult, Sent, Target, run_load
from tests.soak.processes import Served, files_holding, sample_rss

RSS_SLACK_KIB: Final = 64 * 1024  # what the heap 20 MB bodies leave may add (measured: up to 46)
RSS_BOUND_KIB: Final = 768 * 1024
SECONDS: Final = float(os.environ.get("ROLLER_SOAK_SECONDS", "12"))
CLIENTS: Final = int(os.environ.get("ROLLER_SOAK_CLIENTS", "200"))


@dataclass(frozen=True)
class Figures:
    what: str
    exchanges: int
    seconds: float
    faults: dict[str, int]
    rss_start_kib: int
    rss_idle_kib: list[int]  # idle after each phase; the last is the end
    rss_peak_kib: int

    def line(self) -> str:
        injected = sum(n for f, n in self.faults.items() if f != "ok")
        idle = ", ".join(f"{kib // 1024}" for kib in self.rss_idle_kib)
        return (
            f"soak {self.what}: {self.exchanges} exchanges in {self.seconds:.1f}s, "
            f"{injected} faults injected {dict(sorted(self.faults.items()))}, "
            f"RSS start {self.rss_start_kib // 1024} MiB, idle after each phase {idle} MiB, "
            f"peak {self.rss_peak_kib // 1024} MiB"
        )


def _header(exchange: TapeExchange, name: str) -> str | None:
    values = [v for n, v in exchange.request.headers if n.lower() == name]
    return values[0] if len(values) == 1 else None


def soak_id(exchange: TapeExchange) -> str | None:
    return _header(exchange, "x-soak-id")


def soak_fault(exchange: TapeExchange) -> str | None:
    return _header(exchange, "x-soak-fault")


def check_tape(tape: TapeReadResult, load: LoadResult) -> dict[str, TapeExchange]:
    """Each sent request's one exchange, by soak id (asserting the rules above)."""
    assert tape.problems == (), tape.problems[:5]
    by_id: dict[str, list[TapeExchange]] = {}
    for exchange in tape.exchanges:
        by_id.setdefault(soak_id(exchange) or "", []).append(exchange)
    sent = {s.soak_id: s for s in load.exchanges()}
    assert set(by_id) == set(sent), (set(by_id) ^ set(sent)) and sorted(set(by_id) ^ set(sent))[:5]
    wrong: list[tuple[Sent, str | None, int | None]] = []
    for sid, exchanges in by_id.items():
        assert len(exchanges) == 1, (sid, len(exchanges))
        (exchange,) = exchanges
        fault = BY_NAME[sent[sid].fault]
        end = exchange.end
        assert end is not None, sid
        status_ok = fault.upstream_status is None or end.upstream_status == fault.upstream_status
        if end.outcome not in fault.outcomes or not status_ok:
            wrong.append((sent[sid], end.outcome, end.upstream_status))
    assert not wrong, wrong[:10]
    return {sid: exchanges[0] for sid, exchanges in by_id.items()}


def check_no_secret(secrets: tuple[str, ...], *roots: Path) -> None:
    for root in roots:
        found = files_holding(root, secrets) if root.is_dir() else []
        if root.is_file():
            data = root.read_bytes()
            found = [(root, s) for s in secrets if s.encode() in data]
        assert not found, found[:5]


def _idle_rss(served: Served) -> int:
    time.sleep(1.0)  # the last streams' end hooks, then idle
    return served.rss()


def soak(what: str, served: Served, target: Target) -> tuple[LoadResult, Figures]:
    """Two phases of `target` against `served`, asserting the memory rules above."""
    stop = threading.Event()
    sampler = sample_rss(served, stop)
    start = served.rss()
    load = LoadResult()
    idle: list[int] = []
    try:
        for n, big in enumerate((target.max_big // 2, target.max_big - target.max_big // 2)):
            phase = replace(target, seconds=target.seconds / 2, max_big=big, phase=f"p{n}")
            load.extend(asyncio.run(run_load(replace(phase, seed=target.seed + n))))
            idle.append(_idle_rss(served))
    finally:
        stop.set()
        sampler.join(5)
    peak = max([*served.rss_kib, *idle])
    assert idle[1] <= idle[0] + RSS_SLACK_KIB, (start, idle, served.rss_kib)
    assert peak <= RSS_BOUND_KIB, served.rss_kib
    faults = load.faults()
    return load, Figures(what, len(load.exchanges()), load.seconds, faults, start, idle, peak)

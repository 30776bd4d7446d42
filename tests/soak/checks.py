"""What a soak run must show, checked the same way for the proxy and the gateway.

- every request the clients sent is exactly one tape exchange (found by `x-soak-id`),
  ended, with an outcome its fault allows and the upstream status it must have; the
  tape has no other exchange and reads without problems;
- no secret on disk or in the process's log;
- resident memory flat: the last quarter of the samples no higher than the second
  quarter's peak plus `RSS_SLACK_KIB` (the first quarter is warm-up: allocator arenas,
  connection pools, one 20 MB body);
- a summary of the figures (`Figures`) the suite prints for the closing report.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from roller.capture.tape import TapeExchange, TapeReadResult
from tests.soak.load import BY_NAME, LoadResult, Sent
from tests.soak.processes import Served, files_holding

RSS_SLACK_KIB: Final = 48 * 1024
SECONDS: Final = float(os.environ.get("ROLLER_SOAK_SECONDS", "12"))
CLIENTS: Final = int(os.environ.get("ROLLER_SOAK_CLIENTS", "200"))


@dataclass(frozen=True)
class Figures:
    what: str
    exchanges: int
    seconds: float
    faults: dict[str, int]
    rss_start_kib: int
    rss_end_kib: int
    rss_peak_kib: int

    def line(self) -> str:
        injected = sum(n for f, n in self.faults.items() if f != "ok")
        return (
            f"soak {self.what}: {self.exchanges} exchanges in {self.seconds:.1f}s, "
            f"{injected} faults injected {dict(sorted(self.faults.items()))}, "
            f"RSS start {self.rss_start_kib // 1024} MiB, end {self.rss_end_kib // 1024} MiB, "
            f"peak {self.rss_peak_kib // 1024} MiB"
        )


def soak_id(exchange: TapeExchange) -> str | None:
    ids = [v for n, v in exchange.request.headers if n.lower() == "x-soak-id"]
    return ids[0] if len(ids) == 1 else None


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


def check_rss(served: Served) -> tuple[int, int, int]:
    """(start, end, peak) KiB after asserting the flat-memory rule."""
    samples = served.rss_kib
    assert len(samples) >= 8, samples
    quarter = len(samples) // 4
    settled = max(samples[quarter : 2 * quarter])
    last = max(samples[3 * quarter :])
    assert last <= settled + RSS_SLACK_KIB, (settled, last, samples)
    return samples[0], samples[-1], max(samples)


def figures(what: str, load: LoadResult, served: Served) -> Figures:
    start, end, peak = check_rss(served)
    return Figures(what, len(load.exchanges()), load.seconds, load.faults(), start, end, peak)

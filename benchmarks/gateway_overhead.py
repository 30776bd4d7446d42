"""What `roller gateway` adds per request, next to `roller proxy` and a direct call.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/gateway_overhead.py [--requests N] [--rounds R]
        [--concurrency 1,16] [--body-kb K] [--turns T] [--db postgresql+psycopg://…]
        [--before SRC]

One `roller mock-model` (non-streamed replies), and in front of it, each its own process
on 127.0.0.1: `roller proxy` (tape only) and `roller gateway` (tape, token check and key
swap, and the session store: a session's first request resolved by the store before it
is forwarded, later ones from the in-process cache; call rows batched by the background
writer). `--before SRC` adds `gateway-before`: the same gateway command run from another
source tree (`PYTHONPATH=SRC`, e.g. `git archive main src | tar -x -C /tmp/before`), on
its own store and tape, in the same interleaved rounds. The gateway's store is a SQLite
file in WAL mode by default, or the database `--db` names. Requests are Claude
Code-shaped Anthropic Messages turns (`--body-kb` KiB, eight tools; the transcript one
user message, or with `--turns T` T tool calls and their results) carrying a roller
token and `x-claude-code-session-id`, one session per connection, so every request after
the first finds its session row.

Targets take interleaved batches, the order rotating every round, as in
`proxy_overhead.py`; figures are differences against the direct batches of the same row
(latency p50/p99 from the moment the request's bytes are written), the server
process's CPU per request and the throughput of its batches, both also as ratios to
`roller proxy`'s (the issue 16 targets: CPU ≤ 1.25x, throughput ≥ 0.8x). At the end each
gateway's database must hold one call row per request sent through it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from loadgen import Pool, Target
from proxy_overhead import HEADERS, Process, percentile, request_body, start, write_scenario

BEFORE = "gateway-before"


@dataclass
class Stack:
    mock: Process
    servers: dict[str, Process]  # target -> its process (not `direct`)
    token: str
    dbs: dict[str, str]  # gateway target -> its database URL

    @property
    def targets(self) -> tuple[str, ...]:
        return ("direct", *self.servers)

    def url(self, target: str) -> str:
        return (self.mock if target == "direct" else self.servers[target]).url


def _scratch_db(db: str, name: str) -> str:
    """`db` for `gateway`, a database of its own for `gateway-before` (SQLite: a file;
    another server's URL: the same, migrated by whichever starts first — give SQLite)."""
    return db.replace("gateway.db", f"{name}.db") if db.startswith("sqlite:///") else db


def start_stack(work: Path, db: str | None, before: Path | None) -> Stack:
    roller = [sys.executable, "-m", "roller"]
    scenario = work / "scenario.toml"
    write_scenario(scenario)
    mock = start(
        "mock", [*roller, "mock-model", "--scenario", str(scenario), "--quiet"], work / "mock.log"
    )
    proxy = start(
        "roller proxy",
        [*roller, "proxy", "--upstream", mock.url, "--tape", str(work / "tape-proxy")],
        work / "proxy.log",
    )
    config = work / "gateway.toml"
    config.write_text(f'[upstreams]\nanthropic = {{ url = "{mock.url}" }}\n')
    added = subprocess.run(
        [*roller, "gateway", "token", "add", "--config", str(config), "--principal", "bench",
         "--account", "bench", "--harness", "claude-code"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    token = added.stdout.strip().splitlines()[-1]
    db_url = db or f"sqlite:///{work / 'gateway.db'}"
    servers = {"proxy": proxy}
    dbs: dict[str, str] = {}
    for name, src in (("gateway", None), (BEFORE, before)):
        if name == BEFORE and src is None:
            continue
        dbs[name] = _scratch_db(db_url, name)
        servers[name] = start(
            f"roller {name}",
            [*roller, "gateway", "--config", str(config), "--listen", "127.0.0.1:0",
             "--db", dbs[name], "--tape", str(work / f"tape-{name}")],
            work / f"{name}.log",
            env=None if src is None else {**os.environ, "PYTHONPATH": str(src)},
        )  # fmt: skip
    return Stack(mock, servers, token, dbs)


@dataclass
class Row:
    concurrency: int
    targets: tuple[str, ...]
    latencies: dict[str, list[int]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for target in self.targets:
            self.latencies[target], self.cpu[target] = [], 0.0
            self.requests[target], self.seconds[target] = 0, 0.0


async def measure(stack: Stack, concurrency: int, body: bytes, requests: int, rounds: int) -> Row:
    targets = stack.targets
    row = Row(concurrency, targets)
    pools: dict[str, list[Pool]] = {}
    # One connection per session: a pool of one connection each, its own session header.
    for target in targets:
        pools[target] = []
        for n in range(concurrency):
            headers = {**HEADERS, "x-api-key": stack.token, "x-claude-code-session-id": f"s{n}"}
            pool = Pool(Target.build(target, stack.url(target), "/v1/messages", headers, body))
            await pool.resize(1)
            await pool.batch(5)  # warm-up, not counted
            pools[target].append(pool)
    per_pool = max(1, requests // rounds // concurrency)
    try:
        for r in range(rounds):
            turn = r % len(targets)
            for target in targets[turn:] + targets[:turn]:
                server = stack.servers.get(target)
                before = server.cpu_seconds() if server else 0.0
                started = time.perf_counter()
                batches = await asyncio.gather(*(p.batch(per_pool) for p in pools[target]))
                row.seconds[target] += time.perf_counter() - started
                if server:
                    row.cpu[target] += server.cpu_seconds() - before
                for batch in batches:
                    row.latencies[target] += batch.latencies
                    row.requests[target] += len(batch.latencies)
                    row.errors += batch.errors
    finally:
        for target_pools in pools.values():
            for pool in target_pools:
                pool.close()
    return row


def report(rows: list[Row]) -> None:
    print("\nlatency ms (+ = through minus direct), server CPU per request, throughput:")
    print("conc | target         |   +p50   +p99 | cpu us | ÷ proxy | req/s | ÷ proxy")
    for row in rows:
        d50, d99 = (percentile(row.latencies["direct"], q) for q in (50, 99))
        rate = {t: row.requests[t] / max(1e-9, row.seconds[t]) for t in row.targets}
        cpu = {t: 1e6 * row.cpu[t] / max(1, row.requests[t]) for t in row.targets}
        print(f"{row.concurrency:4d} | direct         | {d50:6.2f} {d99:6.2f} |      - |"
              f"       - | {rate['direct']:5.0f} |       -")  # fmt: skip
        for target in row.targets[1:]:
            p50, p99 = (percentile(row.latencies[target], q) for q in (50, 99))
            print(
                f"{row.concurrency:4d} | {target:<14} | {p50 - d50:+6.2f} {p99 - d99:+6.2f} |"
                f" {cpu[target]:6.0f} | {cpu[target] / max(1e-9, cpu['proxy']):6.2f}x |"
                f" {rate[target]:5.0f} | {rate[target] / max(1e-9, rate['proxy']):6.2f}x"
            )
        if row.errors:
            print(f"     {len(row.errors)} errors, first: {row.errors[0]}")


def count_calls(db_url: str) -> int | None:
    if not db_url.startswith("sqlite:///"):
        return None
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        return int(conn.execute("select count(*) from call").fetchone()[0])


async def run(args: argparse.Namespace, work: Path) -> None:
    stack = start_stack(work, args.db, args.before)
    body = request_body(args.body_kb, stream=False, turns=args.turns)
    rows = []
    try:
        for concurrency in args.concurrency:
            rows.append(await measure(stack, concurrency, body, args.requests, args.rounds))
            print(f"c={concurrency} done", file=sys.stderr)
    finally:
        for process in (*stack.servers.values(), stack.mock):
            process.stop()
    report(rows)
    for name, db in stack.dbs.items():
        sent = sum(row.requests[name] for row in rows) + sum(5 * row.concurrency for row in rows)
        stored = count_calls(db)
        if stored is not None:
            verdict = "ok" if stored == sent else "MISMATCH"
            print(f"{name} store: {stored} call rows for {sent} requests sent: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1200, help="per target and row")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16]
    )
    parser.add_argument("--body-kb", type=int, default=16)
    parser.add_argument(
        "--turns",
        type=int,
        default=0,
        help="the transcript as this many tool calls and results (default: one user message)",
    )
    parser.add_argument("--db", help="the gateway's store (default: a SQLite file)")
    parser.add_argument("--before", type=Path, help="a source tree to run gateway-before from")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="roller-gw-bench-") as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()

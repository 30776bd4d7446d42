"""What `roller gateway` adds per request, next to `roller proxy` and a direct call.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/gateway_overhead.py [--requests N] [--rounds R]
        [--concurrency 1,16] [--db postgresql+psycopg://…]

One `roller mock-model` (non-streamed replies), and in front of it, each its own process
on 127.0.0.1: `roller proxy` (tape only) and `roller gateway` (tape, token check and key
swap, and the session store: one transaction to resolve the request's session before it
is forwarded, one to record the call after it ended, both off the event loop in a
thread). The gateway's store is a SQLite file in WAL mode by default, or the database
`--db` names. Requests are Claude Code-shaped Anthropic Messages turns (`--body-kb` KiB,
eight tools) carrying a roller token and `x-claude-code-session-id`, one session per
connection, so every request after the first finds its session row.

Targets take interleaved batches, the order rotating every round, as in
`proxy_overhead.py`; figures are differences against the direct batches of the same row
(latency p50/p99 from the moment the request's bytes are written) and the server
process's CPU per request. At the end the gateway's database must hold one call row per
request sent through it.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from loadgen import Pool, Target
from proxy_overhead import HEADERS, Process, percentile, request_body, start, write_scenario

TARGETS = ("direct", "proxy", "gateway")


@dataclass
class Stack:
    mock: Process
    proxy: Process
    gateway: Process
    token: str
    db: str

    def url(self, target: str) -> str:
        return {"direct": self.mock, "proxy": self.proxy, "gateway": self.gateway}[target].url


def start_stack(work: Path, db: str | None) -> Stack:
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
    gateway = start(
        "roller gateway",
        [*roller, "gateway", "--config", str(config), "--listen", "127.0.0.1:0",
         "--db", db_url, "--tape", str(work / "tape-gateway")],
        work / "gateway.log",
    )  # fmt: skip
    return Stack(mock, proxy, gateway, token, db_url)


@dataclass
class Row:
    concurrency: int
    latencies: dict[str, list[int]] = field(default_factory=lambda: {t: [] for t in TARGETS})
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TARGETS, 0.0))
    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TARGETS, 0))
    errors: list[str] = field(default_factory=list)


async def measure(stack: Stack, concurrency: int, body: bytes, requests: int, rounds: int) -> Row:
    row = Row(concurrency)
    pools: dict[str, list[Pool]] = {}
    # One connection per session: a pool of one connection each, its own session header.
    for target in TARGETS:
        pools[target] = []
        for n in range(concurrency):
            headers = {**HEADERS, "x-api-key": stack.token, "x-claude-code-session-id": f"s{n}"}
            pool = Pool(Target.build(target, stack.url(target), "/v1/messages", headers, body))
            await pool.resize(1)
            await pool.batch(5)  # warm-up, not counted
            pools[target].append(pool)
    servers = {"proxy": stack.proxy, "gateway": stack.gateway}
    per_pool = max(1, requests // rounds // concurrency)
    try:
        for r in range(rounds):
            for target in TARGETS[r % 3 :] + TARGETS[: r % 3]:
                server = servers.get(target)
                before = server.cpu_seconds() if server else 0.0
                batches = await asyncio.gather(*(p.batch(per_pool) for p in pools[target]))
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
    print("\nlatency ms (+ = through minus direct) and server CPU per request:")
    print("conc | direct p50  p99 | proxy +p50  +p99  cpu us | gateway +p50  +p99  cpu us")
    for row in rows:
        d50, d99 = (percentile(row.latencies["direct"], q) for q in (50, 99))
        cells = [f"{row.concurrency:4d} | {d50:10.2f} {d99:5.2f}"]
        for target in ("proxy", "gateway"):
            p50, p99 = (percentile(row.latencies[target], q) for q in (50, 99))
            cpu = 1e6 * row.cpu[target] / max(1, row.requests[target])
            cells.append(f"{p50 - d50:+9.2f} {p99 - d99:+6.2f} {cpu:7.0f}")
        print(" | ".join(cells))
        if row.errors:
            print(f"     {len(row.errors)} errors, first: {row.errors[0]}")


def count_calls(db_url: str) -> int | None:
    if not db_url.startswith("sqlite:///"):
        return None
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        return int(conn.execute("select count(*) from call").fetchone()[0])


async def run(args: argparse.Namespace, work: Path) -> None:
    stack = start_stack(work, args.db)
    body = request_body(args.body_kb, stream=False)
    rows = []
    try:
        for concurrency in args.concurrency:
            rows.append(await measure(stack, concurrency, body, args.requests, args.rounds))
            print(f"c={concurrency} done", file=sys.stderr)
    finally:
        for process in (stack.gateway, stack.proxy, stack.mock):
            process.stop()
    report(rows)
    sent = sum(row.requests["gateway"] for row in rows) + sum(5 * row.concurrency for row in rows)
    stored = count_calls(stack.db)
    if stored is not None:
        verdict = "ok" if stored == sent else "MISMATCH"
        print(f"gateway store: {stored} call rows for {sent} requests sent: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1200, help="per target and row")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16]
    )
    parser.add_argument("--body-kb", type=int, default=16)
    parser.add_argument("--db", help="the gateway's store (default: a SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="roller-gw-bench-") as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()

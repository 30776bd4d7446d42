"""`roller proxy` from two checkouts side by side, next to the bare hop, in the same run.

Run from the repository root (about a minute per mode):

    .venv/bin/python benchmarks/proxy_ab.py --before /tmp/before [--modes json-small,stream]

(`git archive main src | tar -x -C /tmp/before` makes the other checkout.) One `roller
mock-model` (pacing stream events 2 ms apart in `stream` mode, none in the others); in
front of it the bare aiohttp pass-through (`bare_proxy.py`), `roller proxy` from the
`--before` tree (its `src` on PYTHONPATH) and from this one. As in `compare_peers.py`,
the three are pinned to CPU 0 and the mock and this load generator to CPU 1, the
requests are that script's (`json-small`: 1 KiB, `json-large`: 32 KiB and 40 tools,
`burst`/`stream`: the large request streamed), and the three take turns in interleaved
rounds (the order rotates) under the same keep-alive load, so drift in a shared machine
hits all alike. Per proxy: CPU per request (user + system of its process, from /proc),
throughput and p50 latency, CPU and throughput also as ratios to the bare hop's in the
same rounds — the issue 16 item 3 targets are <= 1.15x its CPU per request and >= 0.9x
its throughput. Every roller tape is read back: each exchange sent must be on it, `ok`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from compare_peers import LOAD_CPU, MODES, SUBJECT_CPU, Server, free_port, launch, mode_body
from loadgen import Pool, Target
from proxy_overhead import HEADERS, TOKEN, percentile, write_scenario

from roller.capture.tape import read_tape

HERE = Path(__file__).resolve().parent
PROXIES = ("bare", "before", "after")


def start_proxy(name: str, upstream: str, before: Path, work: Path) -> Server:
    port = free_port()
    listen = ["--listen", f"127.0.0.1:{port}", "--upstream", upstream]
    if name == "bare":
        return launch(
            name, [sys.executable, str(HERE / "bare_proxy.py"), *listen], port, work, SUBJECT_CPU
        )
    tree = before if name == "before" else HERE.parent
    argv = [sys.executable, "-m", "roller", "proxy", *listen, "--tape", str(work / f"tape-{name}")]
    return launch(name, argv, port, work, SUBJECT_CPU, PYTHONPATH=str(tree / "src"))


async def measure(args: argparse.Namespace, mode: str, work: Path) -> None:
    scenario = work / "scenario.toml"
    write_scenario(scenario)
    port = free_port()
    mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
    mock_argv += ["--quiet", "--delay-ms", "2" if mode == "stream" else "0"]
    mock = launch("mock", [*mock_argv, "--listen", f"127.0.0.1:{port}"], port, work, LOAD_CPU)
    procs = {name: start_proxy(name, mock.url, args.before, work) for name in PROXIES}
    body = mode_body(mode, 32)
    pools = {
        n: Pool(Target.build(n, p.url, "/v1/messages", HEADERS, body, TOKEN))
        for n, p in procs.items()
    }
    cpu, wall = dict.fromkeys(PROXIES, 0.0), dict.fromkeys(PROXIES, 0.0)
    latencies: dict[str, list[int]] = {name: [] for name in PROXIES}
    sent, errors = dict.fromkeys(PROXIES, 0), 0
    try:
        for name, pool in pools.items():
            await pool.resize(args.concurrency)
            sent[name] += len((await pool.batch(200)).latencies)
        for round_index in range(args.rounds):
            shift = round_index % len(PROXIES)
            for name in PROXIES[shift:] + PROXIES[:shift]:
                proc = procs[name]
                c0, t0 = proc.cpu_seconds(), time.monotonic()
                batch = await pools[name].batch(args.requests // args.rounds)
                wall[name] += time.monotonic() - t0
                cpu[name] += proc.cpu_seconds() - c0
                latencies[name] += batch.latencies
                sent[name] += len(batch.latencies)
                errors += len(batch.errors)
    finally:
        for pool in pools.values():
            pool.close()
        for process in [*procs.values(), mock]:
            process.stop()
    print(
        f"{mode}: {args.requests} requests per proxy, concurrency {args.concurrency}, "
        f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f}, {errors} failed"
    )
    done = {name: len(latencies[name]) for name in PROXIES}
    bare_cpu, bare_rps = cpu["bare"] / done["bare"], done["bare"] / wall["bare"]
    for name in PROXIES:
        per, rps = cpu[name] / done[name], done[name] / wall[name]
        p50 = percentile(latencies[name], 50)
        print(
            f"  {name:<7} CPU {per * 1e6:6.0f} us/req ({per / bare_cpu:.2f}x bare)  "
            f"{rps:6.0f} req/s ({rps / bare_rps:.2f}x bare)  p50 {p50:6.2f} ms"
        )
    for name in ("before", "after"):
        tape = read_tape(work / f"tape-{name}")
        ok = sum(1 for x in tape.exchanges if x.outcome == "ok")
        if ok != sent[name] or tape.problems:
            print(f"  PROBLEM: {name} taped {ok} ok of {sent[name]}; {tape.problems[:1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--modes", default="json-small,json-large", help=",".join(MODES))
    parser.add_argument("--requests", type=int, default=4800, help="requests per proxy")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="roller-ab-") as work:
            asyncio.run(measure(args, mode, Path(work)))


if __name__ == "__main__":
    main()

"""`roller proxy` from two checkouts side by side, next to the bare hop, in the same run.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/proxy_ab.py --before /work/main [--stream] [--requests N]

One `roller mock-model`; in front of it the bare aiohttp pass-through (`bare_proxy.py`),
`roller proxy` from the `--before` checkout (its `src` on PYTHONPATH) and from this one.
The three take turns in interleaved rounds (the order rotates) under the same keep-alive
load, so drift in a shared machine hits all alike. Per proxy: CPU per request (user +
system, from /proc; system alone in brackets) and throughput, each also as a ratio to
the bare hop's in the same rounds — the issue 16 item 3 targets are >= 0.9x its
throughput and <= 1.15x its CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from loadgen import Pool, Target
from proxy_overhead import (
    CLK_TCK,
    HEADERS,
    HERE,
    TOKEN,
    Process,
    request_body,
    start,
    write_scenario,
)

PROXIES = ("bare", "before", "after")


def system_seconds(process: Process) -> float:
    fields = Path(f"/proc/{process.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / CLK_TCK


def start_proxy(name: str, upstream: str, before: Path, workdir: Path) -> Process:
    log = workdir / f"{name}.log"
    if name == "bare":
        return start(
            name, [sys.executable, str(HERE / "bare_proxy.py"), "--upstream", upstream], log
        )
    tree = before if name == "before" else HERE.parent
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    argv = [sys.executable, "-m", "roller", "proxy", "--upstream", upstream]
    return start(name, [*argv, "--tape", str(workdir / f"tape-{name}")], log, env=env)


async def measure(args: argparse.Namespace, workdir: Path) -> None:
    scenario = workdir / "scenario.toml"
    write_scenario(scenario)
    mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
    mock = start("mock", [*mock_argv, "--quiet", "--delay-ms", "2"], workdir / "mock.log")
    procs = {name: start_proxy(name, mock.url, args.before, workdir) for name in PROXIES}
    body = request_body(16, args.stream)
    pools = {
        n: Pool(Target.build(n, p.url, "/v1/messages", HEADERS, body, TOKEN))
        for n, p in procs.items()
    }
    cpu, system, wall = (dict.fromkeys(PROXIES, 0.0) for _ in range(3))
    done, errors = dict.fromkeys(PROXIES, 0), 0
    loop = asyncio.get_running_loop()
    try:
        for pool in pools.values():
            await pool.resize(args.concurrency)
            await pool.batch(200)
        for round_index in range(args.rounds):
            shift = round_index % len(PROXIES)
            for name in PROXIES[shift:] + PROXIES[:shift]:
                proc = procs[name]
                c0, s0, t0 = proc.cpu_seconds(), system_seconds(proc), loop.time()
                batch = await pools[name].batch(args.requests // args.rounds)
                wall[name] += loop.time() - t0
                cpu[name] += proc.cpu_seconds() - c0
                system[name] += system_seconds(proc) - s0
                done[name] += len(batch.latencies)
                errors += len(batch.errors)
    finally:
        for pool in pools.values():
            pool.close()
        for process in [*procs.values(), mock]:
            process.stop()
    kind = "streamed, 2 ms pacing" if args.stream else "not streamed"
    print(
        f"{kind}: {args.requests} requests per proxy, concurrency {args.concurrency}, "
        f"{args.rounds} rounds, 16 KiB bodies, load average {os.getloadavg()[0]:.1f}, "
        f"{errors} failed requests"
    )
    bare_cpu, bare_rps = cpu["bare"] / done["bare"], done["bare"] / wall["bare"]
    for name in PROXIES:
        per, rps = cpu[name] / done[name], done[name] / wall[name]
        print(
            f"  {name:<7} CPU {per * 1e6:6.0f} us/req (sys {system[name] / done[name] * 1e6:4.0f}"
            f", {per / bare_cpu:.2f}x bare)  {rps:6.0f} req/s ({rps / bare_rps:.2f}x bare)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--requests", type=int, default=4800, help="requests per proxy")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stream", action="store_true", help="streamed replies")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="roller-ab-") as workdir:
        asyncio.run(measure(args, Path(workdir)))


if __name__ == "__main__":
    main()

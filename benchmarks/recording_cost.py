"""Where roller's extra CPU per request goes, next to a bare aiohttp pass-through.

Run from the repository root (about a minute):

    .venv/bin/python benchmarks/recording_cost.py [--requests N] [--rounds R] [--stream]

Four proxies stand in front of one `roller mock-model`, each its own process, and take
turns (interleaved rounds) under the same keep-alive load (concurrency 16):
- `bare`: `bare_proxy.py`, no recording at all;
- `roller-no-tape`: `ProxyServer` with the tape writer's frame methods made no-ops
  (redaction, header rules, exchange bookkeeping, routing all still run);
- `roller-no-write`: every frame built (JSON headers, templates) but not written;
- `roller`: `ProxyServer` as shipped.
The CPU time each proxy process used per request (from /proc) gives, by difference, the
cost of the tape's write syscalls, of building its frames, and of everything else roller
does per exchange. The patches exist only in this benchmark's own server processes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

from loadgen import Pool, Target
from proxy_overhead import (
    HEADERS,
    HERE,
    TOKEN,
    Process,
    request_body,
    start,
    write_scenario,
)

VARIANTS = ("bare", "roller-no-tape", "roller-no-write", "roller")


def patch_tape(variant: str) -> None:
    """Disable parts of the tape writer in this (server) process only."""
    from roller.capture.tape import TapeWriter

    def no_append(self: TapeWriter, parts: list[bytes], total: int = -1) -> None:
        return None

    def no_frame(self: TapeWriter, *args: object, **kwargs: object) -> None:
        return None

    def end_only(self: TapeWriter, exchange_id: str, meta: object, **kwargs: object) -> None:
        self._open.pop(exchange_id, None)

    if variant == "roller-no-write":
        TapeWriter._append = no_append  # type: ignore[method-assign]
    elif variant == "roller-no-tape":
        for name in ("request", "request_body", "response", "chunk"):
            setattr(TapeWriter, name, no_frame)
        TapeWriter.end = end_only  # type: ignore[method-assign,assignment]


async def serve(variant: str, upstream: str, tape: Path) -> None:
    from roller.proxy import ProxyConfig, ProxyServer, Upstreams

    patch_tape(variant)
    server = ProxyServer(ProxyConfig(tape_dir=tape, upstreams=Upstreams(default=upstream)))
    url = await server.start()
    print(f"{variant}: listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(grace=1.0)


def start_variant(variant: str, upstream: str, workdir: Path) -> Process:
    log = workdir / f"{variant}.log"
    if variant == "bare":
        argv = [sys.executable, str(HERE / "bare_proxy.py"), "--upstream", upstream]
    else:
        tape = workdir / f"tape-{variant}"
        argv = [sys.executable, __file__, "--serve", variant, "--upstream", upstream]
        argv += ["--tape", str(tape)]
    return start(variant, argv, log)


async def measure(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    scenario = workdir / "scenario.toml"
    write_scenario(scenario)
    mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
    mock_argv += ["--quiet", "--delay-ms", str(args.delay_ms)]
    mock = start("mock", mock_argv, workdir / "mock.log")
    proxies = {v: start_variant(v, mock.url, workdir) for v in VARIANTS}
    body = request_body(args.body_kb, args.stream)
    pools = {
        v: Pool(Target.build(v, p.url, "/v1/messages", HEADERS, body, TOKEN))
        for v, p in proxies.items()
    }
    cpu = dict.fromkeys(VARIANTS, 0.0)
    done = dict.fromkeys(VARIANTS, 0)
    errors = 0
    try:
        for pool in pools.values():
            await pool.resize(args.concurrency)
            await pool.batch(200)
        for round_index in range(args.rounds):
            shift = round_index % len(VARIANTS)
            for variant in VARIANTS[shift:] + VARIANTS[:shift]:
                before = proxies[variant].cpu_seconds()
                batch = await pools[variant].batch(args.requests // args.rounds)
                cpu[variant] += proxies[variant].cpu_seconds() - before
                done[variant] += len(batch.latencies)
                errors += len(batch.errors)
    finally:
        for pool in pools.values():
            pool.close()
        for process in [*proxies.values(), mock]:
            process.stop()
    if errors:
        print(f"PROBLEM: {errors} failed requests")
    return {v: cpu[v] / done[v] * 1e6 for v in VARIANTS}


def report(per_request: dict[str, float], args: argparse.Namespace) -> None:
    kind = f"streamed, {args.delay_ms} ms pacing" if args.stream else "not streamed"
    print(
        f"proxy CPU per request ({kind}; {args.requests} requests per proxy, concurrency "
        f"{args.concurrency}, {args.body_kb} KiB bodies, load average {os.getloadavg()[0]:.1f}):"
    )
    bare = per_request["bare"]
    for variant in VARIANTS:
        value = per_request[variant]
        print(f"  {variant:<16} {value:7.0f} us  ({value / bare - 1:+.0%} vs bare)")
    print("by difference:")
    parts = [
        ("header rules, redaction, bookkeeping", "roller-no-tape", "bare"),
        ("tape frames built (JSON, templates)", "roller-no-write", "roller-no-tape"),
        ("tape write syscalls", "roller", "roller-no-write"),
    ]
    for label, high, low in parts:
        value = per_request[high] - per_request[low]
        print(f"  {label:<38} {value:6.0f} us  ({value / bare:+.0%} of bare)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per proxy")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--body-kb", type=int, default=16)
    parser.add_argument("--stream", action="store_true", help="streamed replies")
    parser.add_argument("--delay-ms", type=int, default=2, help="stream pacing")
    parser.add_argument("--serve", choices=VARIANTS[1:], help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--tape", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.upstream, args.tape))
        return
    with tempfile.TemporaryDirectory(prefix="roller-bench-") as workdir:
        per_request = asyncio.run(measure(args, Path(workdir)))
    report(per_request, args)


if __name__ == "__main__":
    main()

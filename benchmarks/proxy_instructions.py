"""Instructions per request of the bare hop and of `roller proxy` from two checkouts.

Run from the repository root (a few minutes: the subjects run under valgrind):

    .venv/bin/python benchmarks/proxy_instructions.py --before /tmp/before \
        [--modes json-small,json-large,stream] [--requests 300]

CPU seconds on a shared 2-core machine move by ±20% between runs; instruction counts do
not depend on the load. Each subject (`bare_proxy.py`, `roller proxy` from the `--before`
tree and from this one) runs under `valgrind --tool=callgrind` in front of one `roller
mock-model` (native, as is this load generator), at concurrency 1 so the work per request
does not depend on how requests interleave. After a warm-up the counters are zeroed
(`callgrind_control -z`), `--requests` requests are sent, and the counters are dumped
(`callgrind_control -d`): instructions per request, and as a ratio to the bare hop's (the
issue 16 item 3 target is <= 1.15x its CPU per request). With `--keep DIR` the dumps stay
in DIR for `callgrind_annotate` (the profile of exactly the measured requests).
Instructions are not time (a syscall or a cache miss counts little), so read these next
to `proxy_ab.py`'s CPU figures, not instead of them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_peers import LOAD_CPU, MODES, SUBJECT_CPU, Server, free_port, launch, mode_body
from loadgen import Pool, Target
from proxy_overhead import HEADERS, TOKEN, write_scenario

HERE = Path(__file__).resolve().parent
PROXIES = ("bare", "before", "after")
_TOTAL = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


def start(name: str, upstream: str, before: Path, after: Path, work: Path, out: Path) -> Server:
    port = free_port()
    listen = ["--listen", f"127.0.0.1:{port}", "--upstream", upstream]
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--quiet"]
    if name == "bare":
        argv = [*grind, sys.executable, str(HERE / "bare_proxy.py"), *listen]
        return launch(name, argv, port, work, SUBJECT_CPU)
    tree = before if name == "before" else after
    argv = [*grind, sys.executable, "-m", "roller", "proxy", *listen]
    argv += ["--tape", str(work / f"tape-{name}")]
    return launch(name, argv, port, work, SUBJECT_CPU, PYTHONPATH=str(tree / "src"))


def control(flag: str, pid: int) -> None:
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)


def valgrind_pid(server: Server) -> int:
    """The valgrind process itself (taskset exec'd it, so it is the launched pid)."""
    return server.popen.pid


async def measure(args: argparse.Namespace, mode: str, work: Path) -> dict[str, float]:
    scenario = work / "scenario.toml"
    write_scenario(scenario)
    port = free_port()
    mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
    mock_argv += ["--quiet", "--delay-ms", "2" if mode == "stream" else "0"]
    mock = launch("mock", [*mock_argv, "--listen", f"127.0.0.1:{port}"], port, work, LOAD_CPU)
    body = mode_body(mode, 32)
    per_request: dict[str, float] = {}
    try:
        for name in PROXIES:  # one at a time: instruction counts do not need interleaving
            out = work / f"{mode}-{name}.cg"
            server = start(name, mock.url, args.before, args.after, work, out)
            pool = Pool(Target.build(name, server.url, "/v1/messages", HEADERS, body, TOKEN))
            try:
                await pool.resize(1)
                await pool.batch(args.warmup)
                control("-z", valgrind_pid(server))
                batch = await pool.batch(args.requests)
                control("-d", valgrind_pid(server))
                if batch.errors:
                    print(f"  {name}: {len(batch.errors)} failed: {batch.errors[:1]}")
            finally:
                pool.close()
                server.stop()
            dumps = sorted(work.glob(f"{mode}-{name}.cg.*"))
            total = int(_TOTAL.search(dumps[-1].read_bytes()).group(1))  # type: ignore[union-attr]
            per_request[name] = total / args.requests
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(dumps[-1], args.keep / f"{mode}-{name}.cg")
    finally:
        mock.stop()
    bare = per_request["bare"]
    print(f"{mode}: {args.requests} requests per subject at concurrency 1 (callgrind)")
    for name, count in per_request.items():
        print(f"  {name:<7} {count / 1000:8.0f} k instructions/req ({count / bare:.3f}x bare)")
    return per_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="default: this one")
    parser.add_argument("--modes", default="json-small,json-large", help=",".join(MODES))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--keep", type=Path, default=None, help="keep the dumps here")
    args = parser.parse_args()
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="roller-icount-") as work:
            asyncio.run(measure(args, mode, Path(work)))


if __name__ == "__main__":
    main()

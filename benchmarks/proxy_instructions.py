"""Instructions per request of the bare hop, `roller proxy` and `roller gateway`, from two trees.

Run from the repository root (minutes: the subjects run under valgrind):

    .venv/bin/python benchmarks/proxy_instructions.py --before /tmp/before \
        [--subjects bare,proxy,gateway-sqlite,gateway-pg] [--concurrency 1,16] \
        [--modes json-small,json-large,stream] [--requests 300]

CPU seconds on a shared 2-core machine move by ±20% between runs; instruction counts do
not depend on the load. Each subject (`bare_proxy.py` once; `roller proxy` and the
gateways from the `--before` tree and from this one, started as compare_peers.py starts
them: a roller token, a Claude Code session header per connection) runs under `valgrind
--tool=callgrind` in front of one `roller mock-model` (native, as is this load
generator), instrumented only once started and warmed up (`--instr-atstart=no`: the
start is several times faster). Per concurrency (default 1 only, so the work per request
does not depend on how requests interleave), after a warm-up and a pause for the
gateway's writer to empty its queue, the counters are zeroed (`callgrind_control -z`),
`--requests` requests are sent, the writer is given the same pause, and the counters
are dumped (`callgrind_control -d`): instructions per request, as a ratio to the bare
hop's (issue 16 item 3: the proxy <= 1.15x its CPU) and a gateway's to the proxy's
from its own tree (item 1: <= 1.25x). callgrind runs one thread at a time and counts
every thread, so a gateway's count holds its store thread's work too. With `--keep DIR`
the dumps stay in DIR for `callgrind_annotate` (the profile of the measured requests).
Instructions are not time (a syscall, an fsync or a cache miss counts little), so read
these next to `proxy_ab.py`'s and compare_peers.py's CPU figures, not instead of them.
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
from dataclasses import dataclass
from pathlib import Path

from compare_peers import LOAD_CPU, MODES, Server, Subjects, free_port, launch, mode_body
from loadgen import Pool, Target
from proxy_overhead import HEADERS, TOKEN, write_scenario

HERE = Path(__file__).resolve().parent
SUBJECTS = ("bare", "proxy", "gateway-sqlite", "gateway-pg")
SETTLE_S = 2.0  # the gateway writer's linger is 50 ms; under valgrind a batch is slower
_TOTAL = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


@dataclass(frozen=True)
class Run:
    """One subject from one tree (`tree` None: the bare hop, which imports no roller)."""

    subject: str
    tree: str | None

    @property
    def label(self) -> str:
        return self.subject if self.tree is None else f"{self.subject}/{self.tree}"


def runs(subjects: list[str]) -> list[Run]:
    found = [Run("bare", None)] if "bare" in subjects else []
    for tree in ("before", "after"):
        found += [Run(s, tree) for s in subjects if s != "bare"]
    return found


def start(run: Run, upstream: str, args: argparse.Namespace, work: Path, out: Path) -> Subjects:
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--quiet"]
    grind.append("--instr-atstart=no")  # the start (imports, migrations) several times faster
    env = {} if run.tree is None else {"PYTHONPATH": str(getattr(args, run.tree) / "src")}
    subjects = Subjects(work, work, upstream, wrap=grind, env=env, wait_s=600)
    # A tag per run: a gateway configuration (and its token) is written once per tag.
    subjects.start([run.subject], run.label.replace("/", "-"))
    if not subjects.servers:
        raise SystemExit("; ".join(subjects.notes))
    return subjects


def control(server: Server, *flags: str) -> None:
    """taskset exec'd valgrind, so the launched pid is valgrind's."""
    argv = ["callgrind_control", *flags, str(server.popen.pid)]
    subprocess.run(argv, check=True, capture_output=True)


def newest_dump(out: Path) -> int:
    """The instruction total of the last dump callgrind wrote beside `out` (out.1, out.2…)."""
    dumps = sorted(out.parent.glob(out.name + ".*"), key=lambda p: int(p.suffix[1:]))
    return int(_TOTAL.search(dumps[-1].read_bytes()).group(1))  # type: ignore[union-attr]


async def batch(pools: list[Pool], requests: int) -> list[str]:
    per_pool = max(1, requests // len(pools))
    batches = await asyncio.gather(*(p.batch(per_pool) for p in pools))
    return [e for b in batches for e in b.errors]


async def measure_run(
    run: Run, mode: str, upstream: str, args: argparse.Namespace, work: Path
) -> dict[int, float]:
    """Instructions per request of one subject at each concurrency."""
    out = work / f"{mode}-{run.label.replace('/', '-')}.cg"
    subjects = start(run, upstream, args, work, out)
    server = subjects.servers[run.subject]
    pools = []
    for n in range(max(args.concurrency)):
        headers = {**HEADERS, "x-api-key": subjects.token, "x-claude-code-session-id": f"s{n}"}
        body = mode_body(mode, 32)
        target = Target.build(run.label, server.url, "/v1/messages", headers, body, TOKEN)
        pools.append(Pool(target))
    per_request: dict[int, float] = {}
    try:
        for pool in pools:
            await pool.resize(1)
        await batch(pools, args.warmup)  # uninstrumented: code paths and caches warm
        control(server, "-i", "on")
        for conc in args.concurrency:
            errors = await batch(pools[:conc], args.warmup)
            await asyncio.sleep(SETTLE_S)
            control(server, "-z")
            errors += await batch(pools[:conc], args.requests)
            await asyncio.sleep(SETTLE_S)
            control(server, "-d")
            if errors:
                print(f"  {run.label}: {len(errors)} failed: {errors[:1]}")
            sent = conc * max(1, args.requests // conc)
            per_request[conc] = newest_dump(out) / sent
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                dumps = sorted(work.glob(out.name + ".*"), key=lambda p: int(p.suffix[1:]))
                shutil.copy(dumps[-1], args.keep / f"{out.stem}-c{conc}.cg")
    finally:
        for pool in pools:
            pool.close()
        subjects.stop()
    return per_request


def report(mode: str, requests: int, counts: dict[Run, dict[int, float]]) -> None:
    print(f"{mode}: {requests} requests per subject and concurrency (callgrind)")
    concurrencies = sorted({c for per in counts.values() for c in per})
    for conc in concurrencies:
        bare = next((per[conc] for run, per in counts.items() if run.subject == "bare"), None)
        for run, per in counts.items():
            line = f"  c={conc:<3} {run.label:<22} {per[conc] / 1000:8.0f} k instructions/req"
            if bare:
                line += f"  {per[conc] / bare:.3f}x bare"
            proxy = counts.get(Run("proxy", run.tree))
            if run.subject.startswith("gateway") and proxy:
                line += f"  {per[conc] / proxy[conc]:.3f}x proxy"
            print(line, flush=True)


async def measure(args: argparse.Namespace, mode: str, work: Path) -> None:
    scenario = work / "scenario.toml"
    write_scenario(scenario)
    port = free_port()
    mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
    mock_argv += ["--quiet", "--delay-ms", "2" if mode == "stream" else "0"]
    mock = launch("mock", [*mock_argv, "--listen", f"127.0.0.1:{port}"], port, work, LOAD_CPU)
    counts: dict[Run, dict[int, float]] = {}
    try:
        for run in runs(args.subjects):  # one at a time: instruction counts need no interleaving
            counts[run] = await measure_run(run, mode, mock.url, args, work)
    finally:
        mock.stop()
    report(mode, args.requests, counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="default: this one")
    parser.add_argument("--subjects", default="bare,proxy", help=",".join(SUBJECTS))
    parser.add_argument("--concurrency", default="1", help="e.g. 1,16")
    parser.add_argument("--modes", default="json-small,json-large", help=",".join(MODES))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--keep", type=Path, default=None, help="keep the dumps here")
    args = parser.parse_args()
    args.subjects = args.subjects.split(",")
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="roller-icount-") as work:
            asyncio.run(measure(args, mode, Path(work)))


if __name__ == "__main__":
    main()

"""roller next to its peers: one machine, one upstream, interleaved rounds, ratios.

Run from the repository root (docs/benchmarks.md, "Peers compared"):

    .venv/bin/python benchmarks/compare_peers.py [--quick] [--peers direct,bare,...]

Subjects (`--peers`, default all), each in front of the same `roller mock-model`:
- `direct`: the mock itself; `bare`: benchmarks/bare_proxy.py, an aiohttp hop that
  records nothing; `bare-pool`: the same hop over roller's own upstream client (so
  `proxy` ÷ `bare-pool` is what recording alone costs); `proxy`: `roller proxy`
  recording a tape;
- `gateway-sqlite` / `gateway-pg`: `roller gateway` with a roller token, a Claude Code
  session header per connection, its store in SQLite or in PostgreSQL (a scratch server
  started as scripts/lib/postgres.sh starts the test one; skipped with a note when none
  can be started), as the gateway is on the branch the benchmark runs from;
- `litellm`: LiteLLM's proxy (`litellm[proxy]` pinned below), a pass-through endpoint
  `/v1/messages` -> the mock (`pass_through_endpoints`, no auth, no database, no model
  routing: the least LiteLLM can do with a request), one worker;
- `mitmproxy`: `mitmdump` in reverse mode to the mock, `stream_large_bodies=1` (so it
  streams instead of buffering whole bodies), nothing printed per flow.
Each peer is installed into its own venv under `--cache` (default
~/.cache/roller/bench-peers/<name>-<version>/), reused when the pinned version is there;
each configuration file is written by this script into the run's temporary directory
(`--keep` keeps them, and the servers' logs).

Load (benchmarks/loadgen.py: keep-alive connections, one request in flight each):
modes `json-small` (1 KiB Anthropic request, not streamed), `json-large` (`--body-kb`
KiB, 40 tools: harness size), `burst` (large request, streamed from a mock sending every
event at once) and `stream` (the same from a mock pacing its events `--delay-ms` apart),
at concurrency 1, 16 and 64. Per mode and concurrency the subjects take turns in
`--rounds` batches, the order rotating every round.

Pinning: every subject runs under `taskset -c 0`; the mocks and this process (the load
generator) on CPU 1, so a subject's cost is its own core's and the load competes with
the upstream only. Measured per subject: added p50/p99 latency (minus direct), time to
first byte of streams, throughput, CPU per request (the subject's process tree, from
/proc), peak RSS (VmHWM summed over its tree); printed as ratios against direct and
against the bare hop; then issue 16's targets (`TARGETS`: the proxy against the bare
hop, each gateway against the proxy) as a table of ratios marked met or missed, for the
subjects the run measured. A measurement, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cpu_clock import process_cpu_seconds
from loadgen import Batch, Pool, Target
from proxy_overhead import HEADERS, TOKEN, percentile, write_scenario

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PINS = {"litellm": "litellm[proxy]==1.108.7", "mitmproxy": "mitmproxy==11.0.2"}
PEERS = (
    "direct",
    "bare",
    "bare-pool",
    "proxy",
    "gateway-sqlite",
    "gateway-pg",
    "litellm",
    "mitmproxy",
)
MODES = ("json-small", "json-large", "burst", "stream")
SUBJECT_CPU, LOAD_CPU = "0", "1"


# --- processes ------------------------------------------------------------------------
@dataclass
class Server:
    name: str
    popen: subprocess.Popen[bytes]
    url: str
    log: Path

    def tree(self) -> list[int]:
        pids, todo = [], [self.popen.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            try:
                kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                kids = []
            todo += [int(k) for k in kids]
        return pids

    def cpu_seconds(self) -> float:
        """The CPU time of the process and its children so far, exact (`cpu_clock`)."""
        return sum(filter(None, map(process_cpu_seconds, self.tree())))

    def peak_rss_mb(self) -> float:
        total = 0
        for pid in self.tree():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
            except OSError:
                continue
        return total / 1024

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(
    name: str, argv: list[str], port: int, work: Path, cpu: str, *, wait_s: float = 120, **env: str
) -> Server:
    """Start a server pinned to `cpu` and wait until it accepts connections on `port`."""
    log = work / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            ["taskset", "-c", cpu, *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            cwd=work,
        )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise SystemExit(f"{name} exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return Server(name, popen, f"http://127.0.0.1:{port}", log)
        except OSError:
            time.sleep(0.3)
    popen.kill()
    raise SystemExit(
        f"{name} did not listen on {port} within {wait_s:.0f} s: {log.read_text()[-2000:]}"
    )


def peer_venv(cache: Path, peer: str) -> Path:
    """The peer's own venv with its pinned version, installed once and reused."""
    spec = PINS[peer]
    venv = cache / f"{peer}-{spec.split('==')[1]}"
    marker = venv / "installed.txt"
    if marker.exists() and marker.read_text() == spec:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    print(f"installing {spec} into {venv} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", spec], check=True)
    marker.write_text(spec)
    return venv


def scratch_postgres() -> str | None:
    """A PostgreSQL URL: ROLLER_BENCH_POSTGRES_URL, or scripts/lib/postgres.sh's server."""
    url = os.environ.get("ROLLER_BENCH_POSTGRES_URL")
    if url:
        return url
    script = ROOT / "scripts" / "lib" / "postgres.sh"
    env = {**os.environ, "ROLLER_PG_DIR": "/tmp/roller-bench-postgres"}
    done = subprocess.run(
        ["bash", "-c", f'. "{script}" >&2 && printf %s "$ROLLER_TEST_POSTGRES_URL"'],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return done.stdout.strip() or None


# --- the subjects ---------------------------------------------------------------------
@dataclass
class Subjects:
    work: Path
    cache: Path
    upstream: str
    servers: dict[str, Server] = field(default_factory=dict)
    token: str = "sk-ant-benchmark-not-a-real-key"
    notes: list[str] = field(default_factory=list)
    # roller's own subjects (bare, proxy, gateways) may run under a command prefix and
    # with extra environment: proxy_instructions.py runs them under callgrind, from a tree.
    wrap: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    wait_s: float = 120  # for a subject to listen

    def url(self, peer: str) -> str:
        return self.upstream if peer == "direct" else self.servers[peer].url

    def start(self, peers: Sequence[str], tag: str) -> None:
        for peer in peers:
            if peer == "direct":
                continue
            try:
                self.servers[peer] = getattr(self, "_" + peer.replace("-", "_"))(tag)
            except SystemExit as exc:
                self.notes.append(f"{peer}: not measured ({str(exc).splitlines()[0][:160]})")

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()

    def _roller(self, name: str, argv: list[str], port: int) -> Server:
        """One of roller's own subjects, under `wrap` and with `env`."""
        argv = [*self.wrap, *argv]
        return launch(name, argv, port, self.work, SUBJECT_CPU, wait_s=self.wait_s, **self.env)

    def _bare(self, tag: str) -> Server:
        port = free_port()
        argv = [sys.executable, str(HERE / "bare_proxy.py"), "--listen", f"127.0.0.1:{port}"]
        return self._roller(f"bare-{tag}", [*argv, "--upstream", self.upstream], port)

    def _bare_pool(self, tag: str) -> Server:
        port = free_port()
        argv = [sys.executable, str(HERE / "bare_proxy.py"), "--listen", f"127.0.0.1:{port}"]
        argv += ["--upstream", self.upstream, "--client", "pool"]
        return self._roller(f"bare-pool-{tag}", argv, port)

    def _proxy(self, tag: str) -> Server:
        port = free_port()
        argv = [sys.executable, "-m", "roller", "proxy", "--listen", f"127.0.0.1:{port}"]
        argv += ["--upstream", self.upstream, "--tape", str(self.work / f"tape-proxy-{tag}")]
        return self._roller(f"proxy-{tag}", argv, port)

    def _gateway_config(self, tag: str) -> Path:
        """One configuration and one token for every gateway subject of an upstream
        (tokens live in the configuration; the store is the `--db` each is started with)."""
        config = self.work / f"gateway-{tag}.toml"
        if config.exists():
            return config
        config.write_text(f'[upstreams]\nanthropic = {{ url = "{self.upstream}" }}\n')
        added = subprocess.run(
            [sys.executable, "-m", "roller", "gateway", "token", "add", "--config", str(config),
             "--principal", "bench", "--account", "bench", "--harness", "claude-code"],
            capture_output=True, text=True, check=False, env={**os.environ, **self.env},
        )  # fmt: skip
        if added.returncode != 0:
            config.unlink()
            raise SystemExit(f"token add failed: {added.stderr.strip()[-300:]}")
        self.token = added.stdout.strip().splitlines()[-1]
        return config

    def _gateway(self, tag: str, db: str, name: str) -> Server:
        config = self._gateway_config(tag)
        port = free_port()
        argv = [sys.executable, "-m", "roller", "gateway", "--config", str(config)]
        argv += ["--listen", f"127.0.0.1:{port}", "--db", db]
        argv += ["--tape", str(self.work / f"tape-{name}-{tag}")]
        return self._roller(f"{name}-{tag}", argv, port)

    def _gateway_sqlite(self, tag: str) -> Server:
        return self._gateway(tag, f"sqlite:///{self.work / f'gateway-{tag}.db'}", "gateway-sqlite")

    def _gateway_pg(self, tag: str) -> Server:
        url = scratch_postgres()
        if url is None:
            raise SystemExit("no PostgreSQL server could be started")
        return self._gateway(tag, url, "gateway-pg")

    def _litellm(self, tag: str) -> Server:
        venv = peer_venv(self.cache, "litellm")
        config = self.work / f"litellm-{tag}.yaml"
        target = f"{self.upstream}/v1/messages"
        # LiteLLM refuses to start without a master key; the pass-through itself asks
        # for no authentication (`auth: false`), as the other subjects' hops do not.
        config.write_text(
            "model_list: []\n"
            "general_settings:\n"
            f"  master_key: sk-bench-{secrets.token_hex(16)}\n"
            "  pass_through_endpoints:\n"
            '    - path: "/v1/messages"\n'
            f'      target: "{target}"\n'
            "      forward_headers: true\n"
            "      auth: false\n"
            "litellm_settings:\n"
            "  telemetry: false\n"
        )
        port = free_port()
        argv = [str(venv / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--num_workers", "1"]
        return launch(
            f"litellm-{tag}", argv, port, self.work, SUBJECT_CPU,
            LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR", NO_DOCS="True",
        )  # fmt: skip

    def _mitmproxy(self, tag: str) -> Server:
        venv = peer_venv(self.cache, "mitmproxy")
        port = free_port()
        argv = [str(venv / "bin" / "mitmdump"), "--mode", f"reverse:{self.upstream}"]
        argv += ["--listen-host", "127.0.0.1", "--listen-port", str(port), "--quiet"]
        argv += ["--set", "stream_large_bodies=1", "--set", "flow_detail=0"]
        argv += ["--set", f"confdir={self.work / 'mitmproxy-conf'}"]
        return launch(f"mitmproxy-{tag}", argv, port, self.work, SUBJECT_CPU)


# --- requests ---------------------------------------------------------------------------
def body(kb: int, tools: int, stream: bool) -> bytes:
    schema = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command to run."}},
        "required": ["command"],
    }
    payload: dict[str, Any] = {
        "model": "claude-bench",
        "max_tokens": 1024,
        "stream": stream,
        "system": "You are the benchmark.",
        "tools": [
            {"name": f"tool_{i}", "description": f"Benchmark tool {i}.", "input_schema": schema}
            for i in range(tools)
        ],
        "messages": [{"role": "user", "content": ""}],
    }
    fill = max(0, kb * 1024 - len(json.dumps(payload, separators=(",", ":"))))
    payload["messages"][0]["content"] = ("lorem ipsum dolor sit amet " * (fill // 27 + 1))[:fill]
    return json.dumps(payload, separators=(",", ":")).encode()


def mode_body(mode: str, large_kb: int) -> bytes:
    if mode == "json-small":
        return body(1, 2, False)
    return body(large_kb, 40, mode in ("burst", "stream"))


# --- measuring --------------------------------------------------------------------------
@dataclass
class Cell:
    batches: list[Batch] = field(default_factory=list)
    cpu: float = 0.0
    # wall time of the rounds: at concurrency N a round is N batches side by side, so
    # their own wall times overlap and must not be summed (that divided req/s by N)
    wall_ns: int = 0

    def values(self, what: str) -> list[int]:
        return [x for b in self.batches for x in getattr(b, what)]

    @property
    def requests(self) -> int:
        return len(self.values("latencies"))

    @property
    def throughput(self) -> float:
        wall = self.wall_ns / 1e9
        return self.requests / wall if wall else 0.0

    @property
    def errors(self) -> list[str]:
        return [e for b in self.batches for e in b.errors]


async def measure(
    subjects: Subjects, peers: Sequence[str], mode: str, conc: int, args: argparse.Namespace
) -> dict[str, Cell]:
    cells = {p: Cell() for p in peers}
    data = mode_body(mode, args.body_kb)
    pools: dict[str, list[Pool]] = {}
    for peer in peers:
        pools[peer] = []
        for n in range(conc):
            headers = {**HEADERS, "x-api-key": subjects.token, "x-claude-code-session-id": f"s{n}"}
            target = Target.build(peer, subjects.url(peer), "/v1/messages", headers, data, TOKEN)
            pool = Pool(target)
            await pool.resize(1)
            await pool.batch(3)  # warm-up, not counted
            pools[peer].append(pool)
    per_pool = max(1, args.requests // args.rounds // conc)
    try:
        for r in range(args.rounds):
            order = list(peers[r % len(peers) :]) + list(peers[: r % len(peers)])
            for peer in order:
                server = subjects.servers.get(peer)
                before = server.cpu_seconds() if server else 0.0
                started = time.perf_counter_ns()
                batches = await asyncio.gather(*(p.batch(per_pool) for p in pools[peer]))
                cells[peer].wall_ns += time.perf_counter_ns() - started
                if server:
                    cells[peer].cpu += server.cpu_seconds() - before
                cells[peer].batches += batches
    finally:
        for peer_pools in pools.values():
            for pool in peer_pools:
                pool.close()
    return cells


# Issue 16's targets: (subject, against, "cpu" or "rps", bound). CPU per request is
# met at or under its bound, throughput at or over it. A bound of None is shown, not
# judged: recording's own cost, the proxy against a bare hop over the proxy's client.
TARGETS: Final[tuple[tuple[str, str, str, float | None], ...]] = (
    ("proxy", "bare", "cpu", 1.15),
    ("proxy", "bare", "rps", 0.9),
    ("proxy", "bare-pool", "cpu", None),
    ("gateway-sqlite", "proxy", "cpu", 1.25),
    ("gateway-sqlite", "proxy", "rps", 0.8),
    ("gateway-pg", "proxy", "cpu", 1.25),
    ("gateway-pg", "proxy", "rps", 0.8),
)
# (mode, concurrency) -> peer -> (requests per second, CPU µs per request)
Readings = dict[tuple[str, int], dict[str, tuple[float, float]]]


def readings_of(cells: dict[str, Cell]) -> dict[str, tuple[float, float]]:
    return {
        peer: (cell.throughput, 1e6 * cell.cpu / cell.requests)
        for peer, cell in cells.items()
        if cell.requests and cell.cpu
    }


def target_table(readings: Readings) -> list[str]:
    """The targets as a Markdown table, each ratio marked met or missed, then how many of
    each were met: only the targets whose two subjects every row measured."""
    rows = list(readings)
    kept = [t for t in TARGETS if all(t[0] in readings[r] and t[1] in readings[r] for r in rows)]
    if not rows or not kept:
        return []
    word = {"cpu": ("CPU", "≤"), "rps": ("req/s", "≥")}
    heads = [
        f"{a} {word[k][0]} ÷ {b}" + ("" if bound is None else f" ({word[k][1]} {bound})")
        for a, b, k, bound in kept
    ]
    lines = ["| mode | conc | " + " | ".join(heads) + " |", "|---" * (2 + len(kept)) + "|"]
    met = [0] * len(kept)
    for mode, conc in rows:
        cells = []
        for n, (a, b, kind, bound) in enumerate(kept):
            i = 0 if kind == "rps" else 1
            ratio = readings[mode, conc][a][i] / readings[mode, conc][b][i]
            if bound is None:
                cells.append(f"{ratio:.2f}")
                continue
            ok = ratio >= bound if kind == "rps" else ratio <= bound
            met[n] += ok
            cells.append(f"{ratio:.2f} {'met' if ok else 'missed'}")
        lines.append(f"| {mode} | {conc} | " + " | ".join(cells) + " |")
    judged = [(h, m) for h, m, t in zip(heads, met, kept, strict=True) if t[3] is not None]
    counts = ", ".join(f"{h}: {m} of {len(rows)}" for h, m in judged)
    return [*lines, "", f"met: {counts}"]


def report_rows(mode: str, conc: int, cells: dict[str, Cell], rss: dict[str, float]) -> list[str]:
    direct = cells["direct"]
    d50, d99 = (percentile(direct.values("latencies"), q) for q in (50, 99))
    dttfb = percentile(direct.values("first_bytes"), 50)
    bare = cells.get("bare")
    lines = []
    for peer, cell in cells.items():
        if not cell.requests:
            lines.append(f"{mode:10s} {conc:4d} {peer:15s} no completed request: {cell.errors[:1]}")
            continue
        p50, p99 = (percentile(cell.values("latencies"), q) for q in (50, 99))
        ttfb = percentile(cell.values("first_bytes"), 50)
        cpu = 1e6 * cell.cpu / cell.requests if peer != "direct" else 0.0
        vs_bare = f"{'':>6s} {'':>6s}"
        if bare and bare.requests and bare.cpu and peer != "direct":
            bare_cpu = 1e6 * bare.cpu / bare.requests
            vs_bare = f"{cell.throughput / bare.throughput:5.2f}x {cpu / bare_cpu:5.2f}x"
        stream = f"{ttfb:7.2f} {ttfb / dttfb:5.2f}x" if mode in ("burst", "stream") else " " * 14
        lines.append(
            f"{mode:10s} {conc:4d} {peer:15s} {p50 - d50:+8.2f} {p99 - d99:+8.2f} "
            f"{cell.throughput:8.0f} {cell.throughput / direct.throughput:5.2f}x {vs_bare} "
            f"{cpu:8.0f} {stream} {rss.get(peer, 0):7.0f}"
            + (f"  ({len(cell.errors)} errors)" if cell.errors else "")
        )
    return lines


HEAD = (
    "mode       conc peer              +p50 ms  +p99 ms    req/s  /direct  /bare: rps    cpu "
    "  cpu us/req  TTFB ms  /direct  RSS MB"
)


async def run(args: argparse.Namespace, work: Path) -> list[str]:
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    scenario = work / "scenario.toml"
    write_scenario(scenario)
    lines = [HEAD]
    notes: list[str] = []
    readings: Readings = {}
    phases = (("burst", ("json-small", "json-large", "burst")), ("paced", ("stream",)))
    for upstream_kind, phase_modes in phases:
        modes = tuple(m for m in phase_modes if m in args.modes)
        if not modes:
            continue
        port = free_port()
        pacing = ["--delay-ms", str(args.delay_ms if upstream_kind == "paced" else 0)]
        mock_argv = [sys.executable, "-m", "roller", "mock-model", "--scenario", str(scenario)]
        mock_argv += ["--quiet", "--listen", f"127.0.0.1:{port}", *pacing]
        mock = launch(f"mock-{upstream_kind}", mock_argv, port, work, LOAD_CPU)
        subjects = Subjects(work, args.cache, mock.url)
        try:
            subjects.start(args.peers, upstream_kind)
            peers = ["direct", *(p for p in args.peers if p in subjects.servers)]
            for mode in modes:
                for conc in args.concurrency:
                    cells = await measure(subjects, peers, mode, conc, args)
                    rss = {p: s.peak_rss_mb() for p, s in subjects.servers.items()}
                    lines += report_rows(mode, conc, cells, rss)
                    readings[mode, conc] = readings_of(cells)
                    print(lines[-len(cells) :] and "\n".join(lines[-len(cells) :]), flush=True)
        finally:
            notes += subjects.notes
            subjects.stop()
            mock.stop()
    table = target_table(readings)
    return lines + (["", "issue 16 targets:", *table] if table else []) + notes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a smoke run: few requests, c=1,16")
    p.add_argument("--peers", default=",".join(PEERS), help=f"subset of {','.join(PEERS)}")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--concurrency", default="1,16,64")
    p.add_argument("--requests", type=int, default=600, help="per subject and row")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--body-kb", type=int, default=32, help="harness-size request body")
    p.add_argument("--delay-ms", type=int, default=2, help="pacing of the paced upstream")
    p.add_argument("--cache", type=Path, default=Path.home() / ".cache/roller/bench-peers")
    p.add_argument("--keep", action="store_true", help="keep configs, logs and tapes")
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args(argv)
    args.peers = [x for x in args.peers.split(",") if x and x != "direct"]
    args.modes = args.modes.split(",")
    args.concurrency = [int(x) for x in args.concurrency.split(",")]
    if args.quick:
        args.requests, args.rounds = 40, 2
        args.concurrency = [c for c in args.concurrency if c <= 16] or [1]
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every server this run started is stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="roller-peers-"))
    load = os.getloadavg()[0]
    try:
        lines = asyncio.run(run(args, work))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    header = (
        f"compare_peers: {args.requests} requests per subject and row in {args.rounds} "
        f"interleaved rounds; large body {args.body_kb} KiB (40 tools); stream pacing "
        f"{args.delay_ms} ms; subject on CPU {SUBJECT_CPU}, load and upstream on CPU "
        f"{LOAD_CPU}; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    text = "\n".join([header, *lines])
    print("\n" + text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

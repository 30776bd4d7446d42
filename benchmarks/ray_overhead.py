"""What the Ray executor costs per sample against the local one, on the same tasks.

Starts a local Ray cluster on 127.0.0.1 (`ray.cluster_utils.Cluster`: a head with no
CPUs, two one-CPU worker nodes; dashboard and usage stats off), then collects the same
N tasks four times — local and Ray, one sample at a time and two at a time — against
`mock:plain`, each a generic command (a stdlib-only program making two Anthropic
Messages calls, so the harness itself costs little and the executor's share shows). For
each run it prints the wall time per sample (run wall / N), the harness's own wall time
per sample (from summary.json: the manifest's start to end) and the difference, which is
what the executor adds around the harness: for local, the proxy, mock, launch and
finalize; for Ray, that plus the task's scheduling, the worker, the per-node install
check, the archive and its trip through the object store, and unpacking on the driver.
The cluster's start, the driver's connection and a 2-sample warm-up (the first task on
each node starts its Ray worker process) are printed apart: a real cluster is already
running. With two at a time the harness runs overlap, so compare the per-sample wall of
`local-2` and `ray-2` with each other, not with the harness time.

Run: `python benchmarks/ray_overhead.py [--samples 8]` (needs the `ray` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # "this node" is loopback

import ray
from ray.cluster_utils import Cluster

from roller.capture.reader import read_json_model
from roller.capture.summary_record import RunSummary
from roller.collect.collection import RunRequest, collect_run
from roller.collect.executor import Executor, ExecutorChoice, LocalExecutor
from roller.collect.ray_executor import RayExecutor
from roller.collect.runs import RunSpec

AGENT = """\
import json, os, urllib.request
for _ in range(2):
    req = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
        data=json.dumps({"model": "mock-model", "max_tokens": 32,
                         "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"content-type": "application/json", "x-api-key": "placeholder",
                 "anthropic-version": "2023-06-01"})
    urllib.request.urlopen(req).read()
"""
NODE = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * 2**20}


def _spec(agent: Path) -> RunSpec:
    return RunSpec(
        harness="generic", harness_version=None, api_base="mock:plain", capture_calls=False,
        capture_debug="on-error", model=None, options={},
        command=(sys.executable, str(agent)), timeout_s=120.0, attempts=1, single_agent=True,
    )  # fmt: skip


def _once(base: Path, name: str, executor: Executor, samples: int, agent: Path) -> str:
    tasks = base / f"{name}.jsonl"
    tasks.write_text("".join(f'{{"id": "t{n:03d}", "prompt": "hi"}}\n' for n in range(samples)))
    request = RunRequest(base / name, _spec(agent), tasks_file=tasks)
    started = time.monotonic()
    result = asyncio.run(collect_run(request, executor=executor))
    wall = time.monotonic() - started
    assert result.summary.succeeded == samples, result.summary
    summary = read_json_model(base / name / "summary.json", RunSummary)
    harness = statistics.mean(s.wall_s for s in summary.samples)
    per = wall / samples
    return (
        f"{name:<10} {wall:7.2f} s  {per:6.3f} s/sample  harness {harness:6.3f} s"
        f"  +{per - harness:6.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="roller-ray-bench-"))
    agent = base / "agent.py"
    agent.write_text(AGENT)
    started = time.monotonic()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **NODE}
    )
    for _ in range(2):
        cluster.add_node(num_cpus=1, **NODE)
    cluster.wait_for_nodes()
    up = time.monotonic() - started
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    connected = time.monotonic() - started - up
    print(f"cluster up {up:.1f} s, driver connected {connected:.1f} s; {args.samples} samples")
    print(f"{'run':<10} {'wall':>9}  {'per sample':>15}  {'harness':>14}  executor")
    try:
        # The first task on each node starts its Ray worker process: once per node and
        # run, shown apart from the per-sample cost.
        warm = RayExecutor(ExecutorChoice("ray", concurrency=2))
        print(_once(base, "ray-warmup", warm, 2, agent), "(2 samples: worker start)")
        rows = [
            ("local-1", LocalExecutor(1)),
            ("ray-1", RayExecutor(ExecutorChoice("ray", concurrency=1))),
            ("local-2", LocalExecutor(2)),
            ("ray-2", RayExecutor(ExecutorChoice("ray", concurrency=2))),
        ]
        for name, executor in rows:
            print(_once(base, name, executor, args.samples, agent), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()

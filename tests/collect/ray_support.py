"""One local multi-node Ray cluster on 127.0.0.1 for a test module: a head node with no
CPUs (the driver's; nothing runs there but roller's progress actor) and two worker
nodes of one CPU each, so a sample runs on a worker node and two run at once (the
machine has 2 cores).

Ray is kept on loopback and quiet: node IPs are 127.0.0.1, and
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray resolve "this node" to the loopback
address instead of the machine's routable one (in this process, its effect is set
directly: ray reads it on import; the variable itself is set while the cluster runs, so
the nodes and every `roller collect` the tests start inherit it); no dashboard, no usage
stats. Node processes inherit this process's environment when they start, so
the SDK placeholder keys are set first (a Ray worker's harness gets its credentials from
its node, docs/scale.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Imported now, not by hypothesis's pytest plugin at session end: after a Ray driver ran
# in this process, Python 3.11.7's AST check (pytest rewrites the plugin's modules on
# import) intermittently fails with "AST constructor recursion depth mismatch".
import hypothesis.internal.observability  # noqa: F401
import ray
import ray._private.ray_constants as ray_constants
from ray._private.node import Node
from ray.cluster_utils import Cluster
from tests.collect.runs_support import KEYS

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    **KEYS,
}
# What RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 does, for this process (ray read it on import).
ray_constants.ENABLE_RAY_CLUSTER = False

NODE = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * 2**20}


@dataclass
class LocalCluster:
    cluster: Cluster
    workers: list[Node]

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def node_ids(self) -> list[str]:
        return [str(n.node_id) for n in self.workers]

    def kill(self, node_id: str) -> None:
        (node,) = [n for n in self.workers if n.node_id == node_id]
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)


@contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    saved = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)  # inherited by the nodes as they start
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, **NODE},
    )
    try:
        workers = [cluster.add_node(num_cpus=1, **NODE) for _ in range(2)]
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield LocalCluster(cluster, workers)
    finally:
        ray.shutdown()
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

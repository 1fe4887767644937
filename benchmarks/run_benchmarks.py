"""Benchmarks, printed as one JSON document on stdout: ``make bench``.

* ``scheduling``: ``Scheduler.solve`` wall time and pods/s over a ladder of pod counts, with
  every us-east-1 instance type (real catalog, one zone pair) and a broad NodePool, on a mix of
  Karpenter's benchmark pod shapes (cpu/memory combinations).
* ``simulation``: the seed scenario end to end: virtual seconds per wall second.
* ``preemption``: kube-scheduler preemption as ``joiner plan`` runs it, over a ladder of node
  counts: every 4-vCPU node held by a priority -10 placeholder, one pending pod of priority
  0 per node; seconds to find and nominate a node for each.
* ``peakMemoryBytes``: peak RSS growth seen by tracemalloc over the scheduling ladder.

Numbers are for comparison between commits on the same machine, never asserted in tests.
"""

from __future__ import annotations

import json
import platform
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

from joiner.api import labels, quantity
from joiner.api.requirements import Requirement
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.operator.wiring import SimulationRuntime
from joiner.scheduling import NodePoolTemplate, Scheduler, SchedulingInput
from joiner.sim import preemption
from joiner.sim.scenario import load_scenario
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.testing.builders import GIB, make_nodepool, make_pod_template, make_pods

REPO = Path(__file__).resolve().parents[1]
SHAPES = [(100, GIB // 4), (500, GIB), (1000, 2 * GIB), (2000, 4 * GIB), (4000, 8 * GIB)]


def scheduling_ladder(counts: list[int]) -> list[dict[str, float]]:
    catalog = Catalog.load()
    zones = [z for z in catalog.zones("us-east-1") if z[0] in ("us-east-1a", "us-east-1b")]
    types = tuple(build_instance_types(catalog, "us-east-1", zones))
    pool = make_nodepool(
        requirements=[
            Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand"),
            Requirement.in_(labels.ARCH, "amd64", "arm64"),
        ]
    )
    rows = []
    for n in counts:
        pods = tuple(
            p
            for i, (cpu, mem) in enumerate(SHAPES)
            for p in make_pods(make_pod_template(cpu, mem), n // len(SHAPES), f"s{i}")
        )
        inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(pool, types),))
        start = time.perf_counter()
        result = Scheduler().solve(inp)
        elapsed = time.perf_counter() - start
        rows.append(
            {
                "pods": len(pods),
                "instanceTypes": len(types),
                "seconds": round(elapsed, 4),
                "podsPerSecond": round(len(pods) / elapsed, 1) if elapsed else 0.0,
                "nodeClaims": len(result.new_nodeclaims),
            }
        )
    return rows


def simulation_speed() -> dict[str, float]:
    scenario = load_scenario(REPO / "examples" / "seed-spot" / "scenario.yaml")
    start = time.perf_counter()
    SimulationRuntime(scenario).run()
    elapsed = time.perf_counter() - start
    return {
        "scenario": scenario.name,
        "virtualSeconds": scenario.duration_s,
        "wallSeconds": round(elapsed, 4),
        "virtualSecondsPerWallSecond": round(scenario.duration_s / elapsed, 1),
    }


def _placeholders(n: int) -> tuple[ClusterState, list[Pod]]:
    """``n`` nodes each held by a placeholder, and ``n`` pending pods that preempt them."""
    state = ClusterState()
    room = {quantity.CPU: 4000, quantity.MEMORY: 8 * GIB, quantity.PODS: 58}
    holder = replace(make_pod_template(3000, GIB), priority=-10)
    web = replace(make_pod_template(3000, GIB), priority=0)
    for i in range(n):
        name = f"n{i:05d}"
        state.nodes[name] = Node(name, None, {labels.HOSTNAME: name}, (), room, room, 0.0, True)
        uid = f"ph-{i}"
        state.pods[uid] = Pod(uid, "default", uid, holder, "x", 0.0, i, name, 0.0)
    pending = [Pod(f"web-{i}", "default", f"web-{i}", web, "y", 0.0, n + i) for i in range(n)]
    for p in pending:
        state.pods[p.uid] = p
    return state, pending


def preemption_ladder(counts: list[int]) -> list[dict[str, float]]:
    rows = []
    for n in counts:
        state, pending = _placeholders(n)
        verdicts: preemption.Verdicts = {}
        start = time.perf_counter()
        for pod in pending:
            found = preemption.find(state, pod, verdicts)
            if found is None:
                break
            preemption.nominate(state, pod, found)
            for victim in found.victims:
                victim.deleted_at_s = 0.0
        elapsed = time.perf_counter() - start
        placed = sum(p.nominated_node_name is not None for p in pending)
        rows.append({"nodes": n, "preemptions": placed, "seconds": round(elapsed, 4)})
    return rows


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [10, 100, 500, 1000]
    tracemalloc.start()
    ladder = scheduling_ladder(counts)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    doc = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "scheduling": ladder,
        "simulation": simulation_speed(),
        "preemption": preemption_ladder([500, 1000]),
        "peakMemoryBytes": peak,
    }
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()

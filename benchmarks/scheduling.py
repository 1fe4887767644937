"""Scheduling benchmark, after Karpenter's ``scheduling_benchmark_test.go``: one command,
prints a JSON list with one object per run.

Catalogs: ``synthetic-400`` (type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, offerings in 3
zones, spot and on-demand; KWOK-style prices) and ``us-east-1`` (the real packaged catalog).
Pods are split evenly over five shapes: plain; zonal spread maxSkew 1; hostname spread
maxSkew 1; zonal self-affinity; hostname self-anti-affinity, with CPU from {100m, 250m,
500m, 1, 1.5} and memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi} drawn with a fixed seed.

Each run happens in its own process so ``peakMemoryBytes`` (max RSS) is that run's own.
Usage: ``python benchmarks/scheduling.py [--catalog synthetic-400|us-east-1] [COUNTS...]``.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time
from typing import Any

from joiner.api import labels, quantity
from joiner.api.objects import (
    DO_NOT_SCHEDULE,
    PodAffinityTerm,
    PodTemplate,
    TopologySpreadConstraint,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput
from joiner.testing.builders import make_nodepool

COUNTS = [1, 100, 1000, 2000, 5000, 10000, 20000]
CPUS = [100, 250, 500, 1000, 1500]
MEMS = [m * quantity.MIB for m in (100, 256, 512, 1024, 2048, 4096)]
ZONES = [("test-zone-a", "tza"), ("test-zone-b", "tzb"), ("test-zone-c", "tzc")]


def synthetic_types() -> list[InstanceType]:
    out = []
    for i in range(400):
        cpu = i + 1
        gib = 2 * (i + 1)
        od = 0.025 * cpu + 0.001 * gib
        offerings = tuple(
            Offering(
                zone=z,
                zone_id=zid,
                capacity_type=ct,
                price_per_hour=od * (0.7 if ct == "spot" else 1),
            )
            for z, zid in ZONES
            for ct in ("spot", "on-demand")
        )
        name = f"synthetic-{cpu}x"
        capacity = {
            quantity.CPU: cpu * 1000,
            quantity.MEMORY: gib * quantity.GIB,
            quantity.PODS: 10 * cpu,
        }
        reqs = Requirements(
            [
                Requirement.in_(labels.INSTANCE_TYPE, name),
                Requirement.in_(labels.ARCH, "amd64"),
                Requirement.in_(labels.OS, "linux"),
                Requirement.in_(labels.ZONE, *[z for z, _ in ZONES]),
                Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand"),
            ]
        )
        out.append(InstanceType(name, reqs, capacity, {}, dict(capacity), offerings))
    return out


def real_types() -> list[InstanceType]:
    catalog = Catalog.load()
    zones = [
        z for z in catalog.zones("us-east-1") if z[0] in ("us-east-1a", "us-east-1b", "us-east-1c")
    ]
    return build_instance_types(catalog, "us-east-1", zones)


def _shape_templates() -> dict[tuple[int, int, int], PodTemplate]:
    out = {}
    for shape in range(5):
        name = ["plain", "zonal-spread", "host-spread", "zonal-affinity", "host-anti"][shape]
        sel = Requirements.from_labels({"app": name})
        for cpu in CPUS:
            for mem in MEMS:
                kwargs: dict[str, Any] = {}
                if shape == 1:
                    kwargs["spread"] = (
                        TopologySpreadConstraint(labels.ZONE, 1, sel, DO_NOT_SCHEDULE),
                    )
                elif shape == 2:
                    kwargs["spread"] = (
                        TopologySpreadConstraint(labels.HOSTNAME, 1, sel, DO_NOT_SCHEDULE),
                    )
                elif shape == 3:
                    kwargs["pod_affinity"] = (PodAffinityTerm(labels.ZONE, sel),)
                elif shape == 4:
                    kwargs["pod_anti_affinity"] = (PodAffinityTerm(labels.HOSTNAME, sel),)
                out[(shape, cpu, mem)] = PodTemplate(
                    requests={quantity.CPU: cpu, quantity.MEMORY: mem, quantity.PODS: 1},
                    labels=(("app", name),),
                    **kwargs,
                )
    return out


def make_pods(n: int, seed: int = 1) -> list[PodRequest]:
    rng = random.Random(seed)
    templates = _shape_templates()
    pods = []
    for i in range(n):
        t = templates[(i % 5, rng.choice(CPUS), rng.choice(MEMS))]
        pods.append(PodRequest(f"pod-{i:05d}", t, i))
    return pods


def run_one(catalog: str, n: int) -> dict[str, Any]:
    types = synthetic_types() if catalog == "synthetic-400" else real_types()
    pool = make_nodepool(requirements=[Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])
    pods = make_pods(n)
    inp = SchedulingInput(pods=tuple(pods), nodepools=(NodePoolTemplate(pool, tuple(types)),))
    start = time.perf_counter()
    result = Scheduler().solve(inp)
    seconds = time.perf_counter() - start
    scheduled = sum(len(c.pods) for c in result.new_nodeclaims) + len(result.existing_placements)
    cost = 0.0
    for c in result.new_nodeclaims:
        prices = [it.cheapest_price(c.requirements) for it in c.instance_types[:1]]
        cost += prices[0] or 0.0
    return {
        "catalog": catalog,
        "pods": n,
        "scheduled": scheduled,
        "unschedulable": len(result.unschedulable),
        "seconds": round(seconds, 4),
        "podsPerSecond": round(n / seconds, 1) if seconds > 0 else None,
        "nodes": len(result.new_nodeclaims),
        "costPerHour": round(cost, 4),
        "peakMemoryBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1], int(argv[2]))))
        return
    catalogs = ["synthetic-400", "us-east-1"]
    if argv[:1] == ["--catalog"]:
        catalogs, argv = [argv[1]], argv[2:]
    counts = [int(a) for a in argv] or COUNTS
    rows = []
    for catalog in catalogs:
        for n in counts:
            proc = subprocess.run(
                [sys.executable, __file__, "--one", catalog, str(n)],
                check=True,
                capture_output=True,
                text=True,
            )
            row = json.loads(proc.stdout)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Scheduling benchmark, after Karpenter's ``scheduling_benchmark_test.go``: one command,
prints a JSON list with one object per run.

Catalogs: ``synthetic-400`` (type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, offerings in 3
zones, spot and on-demand; KWOK-style prices) and ``us-east-1`` (the real packaged catalog).
Pods are split evenly over five shapes: plain; zonal spread maxSkew 1; hostname spread
maxSkew 1; zonal self-affinity; hostname self-anti-affinity, with CPU from {100m, 250m,
500m, 1, 1.5} and memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi} drawn with a fixed seed.

Each run happens in its own process so ``peakMemoryBytes`` (max RSS) is that run's own;
``seconds`` is the solve's wall time, ``cpuSeconds`` its CPU time (user and system, of the
run's process); the process sets the cyclic garbage collector as a ``joiner`` command does
(``joiner.sim.gctuning``). Usage: ``python benchmarks/scheduling.py
[--catalog synthetic-400|us-east-1] [COUNTS...]``.

``--ladder`` runs the diverse mix on ``synthetic-400`` over ``LADDER`` (1,000 to 100,000
pods; counts after it replace the ladder) and prints one JSON object: the machine's
``calibrationCpuSeconds`` (``benchmarks/realistic.py``), the runs, and the growth of CPU time
with the pod count, ``log(cpu2 / cpu1) / log(n2 / n1)``: per step (``growthExponents``) and
from 20,000 to 100,000 pods (``growthExponent20kTo100k``; 1 is linear). ``--ladder --repeat
N`` climbs the ladder N times and takes each size's median run (a shared machine's load
varies by a fifth or more between runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
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
from joiner.sim.gctuning import tune_for_simulation
from joiner.testing.builders import make_nodepool

COUNTS = [1, 100, 1000, 2000, 5000, 10000, 20000]
LADDER = [1000, 2000, 5000, 10000, 20000, 50000, 100000]
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


#: Zones and capacity types of each offering of Karpenter's fake instance types
#: (sigs.k8s.io/karpenter pkg/cloudprovider/fake NewInstanceType's default offerings).
FAKE_OFFERINGS = (
    ("test-zone-1", "spot"),
    ("test-zone-2", "spot"),
    ("test-zone-1", "on-demand"),
    ("test-zone-2", "on-demand"),
    ("test-zone-3", "on-demand"),
)


def karpenter_fake_types(total: int = 400) -> list[InstanceType]:
    """The instance types Karpenter's scheduling benchmark schedules on (sigs.k8s.io/karpenter
    pkg/cloudprovider/fake InstanceTypes): type i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods,
    kube-reserved 100m CPU and 10Mi memory, the five default offerings (spot in two zones,
    on-demand in three), every one at 0.1 per vCPU plus 0.1 per 10^9 bytes of memory."""
    out = []
    for i in range(total):
        cpu, gib = i + 1, 2 * (i + 1)
        price = 0.1 * cpu + 0.1 * gib * quantity.GIB / 1e9
        name = f"fake-it-{i}"
        capacity = {
            quantity.CPU: cpu * 1000,
            quantity.MEMORY: gib * quantity.GIB,
            quantity.PODS: 10 * cpu,
        }
        overhead = {quantity.CPU: 100, quantity.MEMORY: 10 * quantity.MIB}
        allocatable = {k: v - overhead.get(k, 0) for k, v in capacity.items()}
        offerings = tuple(
            Offering(zone=z, zone_id=z, capacity_type=ct, price_per_hour=price)
            for z, ct in FAKE_OFFERINGS
        )
        reqs = Requirements(
            [
                Requirement.in_(labels.INSTANCE_TYPE, name),
                Requirement.in_(labels.ARCH, "amd64"),
                Requirement.in_(labels.OS, "darwin", "linux", "windows"),
                Requirement.in_(labels.ZONE, "test-zone-1", "test-zone-2", "test-zone-3"),
                Requirement.in_(labels.CAPACITY_TYPE, "on-demand", "spot"),
            ]
        )
        out.append(InstanceType(name, reqs, capacity, overhead, allocatable, offerings))
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
    """One solve of ``n`` pods of the mix on ``catalog``, with the cyclic collector set as
    every ``joiner`` command sets it (``joiner.sim.gctuning``), as a row of the output."""
    tune_for_simulation()
    types = synthetic_types() if catalog == "synthetic-400" else real_types()
    pool = make_nodepool(requirements=[Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])
    pods = make_pods(n)
    inp = SchedulingInput(pods=tuple(pods), nodepools=(NodePoolTemplate(pool, tuple(types)),))
    start, start_cpu = time.perf_counter(), time.process_time()
    result = Scheduler().solve(inp)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - start_cpu
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
        "cpuSeconds": round(cpu_seconds, 4),
        "podsPerSecond": round(n / seconds, 1) if seconds > 0 else None,
        "nodes": len(result.new_nodeclaims),
        "costPerHour": round(cost, 4),
        "peakMemoryBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def run_child(catalog: str, n: int) -> dict[str, Any]:
    """``run_one`` in a process of its own (its row is also echoed on stderr)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--one", catalog, str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    row: dict[str, Any] = json.loads(proc.stdout)
    print(json.dumps(row), file=sys.stderr)
    return row


def growth_exponent(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """How CPU time grows from run ``a`` to run ``b``: ``log(cpu_b / cpu_a) / log(n_b /
    n_a)`` (1 is linear); None without two positive times and two distinct counts."""
    if a["cpuSeconds"] <= 0 or b["cpuSeconds"] <= 0 or a["pods"] == b["pods"]:
        return None
    ratio = math.log(b["cpuSeconds"] / a["cpuSeconds"]) / math.log(b["pods"] / a["pods"])
    return round(ratio, 3)


def _median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One size's runs as one row: the run of median CPU time, with every run's CPU
    seconds beside it (``cpuSecondsRuns``)."""
    ordered = sorted(runs, key=lambda r: r["cpuSeconds"])
    row = dict(ordered[(len(ordered) - 1) // 2])
    row["cpuSecondsRuns"] = [r["cpuSeconds"] for r in runs]
    return row


def ladder(counts: list[int], repeat: int = 1) -> dict[str, Any]:
    """The diverse mix on ``synthetic-400`` over ``counts`` (ascending), with the machine's
    calibration and the growth exponents (see the module docstring). With ``repeat`` > 1
    the ladder is climbed that many times, rounds one after another (so a busy spell of a
    shared machine falls on every size alike), and each size's row is its median run."""
    sys.path.append(str(Path(__file__).resolve().parent))
    import realistic  # benchmarks/realistic.py: the calibration workload

    calibration = realistic.calibration_cpu_s()
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for _ in range(repeat):
        for n in counts:
            runs[n].append(run_child("synthetic-400", n))
    rows = [_median_row(runs[n]) if repeat > 1 else runs[n][0] for n in counts]
    steps = [
        {"fromPods": a["pods"], "toPods": b["pods"], "exponent": growth_exponent(a, b)}
        for a, b in itertools.pairwise(rows)
    ]
    by_pods = {r["pods"]: r for r in rows}
    overall = None
    if 20000 in by_pods and 100000 in by_pods:
        overall = growth_exponent(by_pods[20000], by_pods[100000])
    return {
        "calibrationCpuSeconds": calibration,
        "runs": rows,
        "growthExponents": steps,
        "growthExponent20kTo100k": overall,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Karpenter's scheduling benchmark mix, solved by Joiner; prints JSON.",
    )
    parser.add_argument("counts", nargs="*", type=int, metavar="COUNT", help="pod counts")
    parser.add_argument(
        "--catalog",
        choices=["synthetic-400", "us-east-1"],
        help="one catalog (default: both)",
    )
    parser.add_argument(
        "--ladder",
        action="store_true",
        help="the diverse mix on synthetic-400 over the ladder (1,000 to 100,000 pods, or "
        "the COUNTs), with the growth exponents",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="with --ladder: climb N times"
    )
    parser.add_argument("--one", nargs=2, metavar=("CATALOG", "N"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    if args.one is not None:  # one run, in the child process ``run_child`` starts
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return
    if args.ladder:
        counts = sorted(args.counts) or LADDER
        print(json.dumps(ladder(counts, args.repeat), indent=2))
        return
    catalogs = [args.catalog] if args.catalog else ["synthetic-400", "us-east-1"]
    counts = args.counts or COUNTS
    rows = [run_child(catalog, n) for catalog in catalogs for n in counts]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])

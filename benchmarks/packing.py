"""Packing benchmark: what each ``packing`` policy buys against the LP lower bound.

Prints a JSON list of rows ``{mix, pods, catalog, policy, costPerHour, lowerBoundPerHour,
ratio, solveSeconds, assignmentBoundPerHour, assignmentRatio, patternBoundPerHour,
patternRatio, patternBoundSeconds, patternConverged}``: ``policy`` is
``karpenter`` (the faithful algorithm) or ``cost-optimal``; ``ratio`` is cost over the LP
lower bound (``joiner.scheduling.costopt.lp.lower_bound``: resources summed over all
NodeClaims); ``assignmentRatio`` is cost over the tighter assignment bound
(``lp.assignment_bound``: each type's NodeClaims hold what is put on that type, so one
type's spare memory cannot serve another's CPU; on catalogs with very cheap small types,
such as the packaged one's t3.nano spot, the first bound is far below any real packing);
``patternRatio`` is cost over the pattern LP bound (``patterns.pattern_bound``: each
NodeClaim holds whole pods, hostname anti-affinity and spread kept per node, by column
generation; ``patternBoundSeconds`` its CPU time, ``patternConverged`` whether it reached the
LP optimum within ``patterns.GAP``; the value is a valid bound either way);
``solveSeconds`` is the solve's CPU time (process time, so other load on the machine does not
count). Mixes, with Karpenter's benchmark requests (CPU from {100m, 250m, 500m, 1, 1.5},
memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi}, a fixed seed):

* ``resources``: requests only;
* ``diverse``: Karpenter's benchmark mix (``scheduling.py``: plain, zonal spread, hostname
  spread, zonal self-affinity, hostname self-anti-affinity);
* ``zonal-spread``: five Deployments, each spread over the zones with maxSkew 1.

Catalogs: ``packaged`` (the us-east-1 catalog, three zones) and ``synthetic-400``
(``scheduling.py``'s 400 types). Usage: ``python benchmarks/packing.py [COUNTS...]``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from scheduling import CPUS, MEMS, make_pods, real_types, synthetic_types

from joiner.api import labels, quantity
from joiner.api.objects import DO_NOT_SCHEDULE, PodTemplate, TopologySpreadConstraint
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, SchedulingInput
from joiner.scheduling.costopt import PACKINGS, lower_bound, plan_cost, scheduler_for
from joiner.scheduling.costopt.lp import assignment_bound
from joiner.scheduling.costopt.patterns import pattern_bound
from joiner.testing.builders import make_nodepool

COUNTS = [100, 2000, 20000]
MIXES = ["resources", "diverse", "zonal-spread"]


def resource_pods(n: int, seed: int = 1) -> list[PodRequest]:
    rng = random.Random(seed)
    templates = {
        (c, m): PodTemplate(requests={quantity.CPU: c, quantity.MEMORY: m, quantity.PODS: 1})
        for c in CPUS
        for m in MEMS
    }
    return [
        PodRequest(f"pod-{i:05d}", templates[(rng.choice(CPUS), rng.choice(MEMS))], i)
        for i in range(n)
    ]


def zonal_pods(n: int, seed: int = 1) -> list[PodRequest]:
    rng = random.Random(seed)
    templates = {}
    for d in range(5):
        sel = Requirements.from_labels({"app": f"zonal-{d}"})
        for c in CPUS:
            for m in MEMS:
                templates[(d, c, m)] = PodTemplate(
                    requests={quantity.CPU: c, quantity.MEMORY: m, quantity.PODS: 1},
                    labels=(("app", f"zonal-{d}"),),
                    spread=(TopologySpreadConstraint(labels.ZONE, 1, sel, DO_NOT_SCHEDULE),),
                )
    return [
        PodRequest(f"pod-{i:05d}", templates[(i % 5, rng.choice(CPUS), rng.choice(MEMS))], i)
        for i in range(n)
    ]


def mix_pods(mix: str, n: int) -> list[PodRequest]:
    if mix == "resources":
        return resource_pods(n)
    if mix == "diverse":
        return make_pods(n)
    return zonal_pods(n)


def rows_for(catalog: str, mix: str, n: int) -> list[dict[str, Any]]:
    types = tuple(synthetic_types() if catalog == "synthetic-400" else real_types())
    pool = make_nodepool(requirements=[Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])
    inp = SchedulingInput(pods=tuple(mix_pods(mix, n)), nodepools=(NodePoolTemplate(pool, types),))
    bound = lower_bound(inp)
    tighter = assignment_bound(inp)
    start = time.process_time()
    patterns = pattern_bound(inp)
    pattern_seconds = time.process_time() - start
    best = patterns.value
    out = []
    for policy in PACKINGS:
        start = time.process_time()
        result = scheduler_for(policy).solve(inp)
        seconds = time.process_time() - start
        if result.unschedulable:
            raise SystemExit(f"{policy} left {len(result.unschedulable)} pods unschedulable")
        cost = plan_cost(result)
        out.append(
            {
                "mix": mix,
                "pods": n,
                "catalog": catalog,
                "policy": policy,
                "costPerHour": round(cost, 4),
                "lowerBoundPerHour": round(bound, 4),
                "ratio": round(cost / bound, 4) if bound > 0 else None,
                "solveSeconds": round(seconds, 3),
                "assignmentBoundPerHour": round(tighter, 4),
                "assignmentRatio": round(cost / tighter, 4) if tighter > 0 else None,
                "patternBoundPerHour": round(best, 4),
                "patternRatio": round(cost / best, 4) if best > 0 else None,
                "patternBoundSeconds": round(pattern_seconds, 2),
                "patternConverged": patterns.converged,
            }
        )
    return out


def main(argv: list[str]) -> None:
    counts = [int(a) for a in argv] or COUNTS
    rows = []
    for catalog in ("packaged", "synthetic-400"):
        for mix in MIXES:
            for n in counts:
                for row in rows_for(catalog, mix, n):
                    print(json.dumps(row), file=sys.stderr)
                    rows.append(row)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])

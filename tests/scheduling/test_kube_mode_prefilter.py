"""kube-scheduler mode scores only the nodes with room for a pod (``_Solve._try_existing``
marks the others dead unscored): placements equal a direct LeastAllocated choice among every
node that fits, ties by name, in the pods' creation order."""

from __future__ import annotations

import random

import pytest

from joiner.scheduling import ExistingNode, PodRequest, Scheduler, SchedulingInput
from joiner.testing.builders import GIB, make_pod_template


def _reference(nodes: list[ExistingNode], pods: list[PodRequest]) -> list[tuple[str, str]]:
    free = {n.name: dict(n.available) for n in nodes}
    alloc = {n.name: n.allocatable or {} for n in nodes}
    out = []
    for p in pods:
        req = p.template.requests
        fitting = [n for n in free if all(v <= free[n].get(k, 0) for k, v in req.items())]
        if not fitting:
            continue

        def score(n: str, req: dict[str, int] = req) -> float:
            shares = [
                (free[n].get(r, 0) - req.get(r, 0)) / alloc[n][r]
                for r in ("cpu", "memory")
                if alloc[n].get(r, 0) > 0
            ]
            return sum(shares) / len(shares)

        best = min(fitting, key=lambda n: (-score(n), n))
        for k, v in req.items():
            free[best][k] = free[best].get(k, 0) - v
        out.append((p.uid, best))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_kube_scheduler_mode_matches_least_allocated_over_fitting_nodes(seed):
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(1, 12)):
        cpu, mem = rng.choice([(2000, 8), (4000, 16), (8000, 32)])
        nodes.append(
            ExistingNode(
                name=f"n{i:02d}",
                labels=(),
                taints=(),
                available={
                    "cpu": rng.randint(0, cpu),
                    "memory": rng.randint(0, mem) * GIB,
                    "pods": rng.randint(0, 20),
                },
                initialized=True,
                allocatable={"cpu": cpu, "memory": mem * GIB, "pods": 58},
            )
        )
    templates = [make_pod_template(c, m * GIB) for c, m in [(250, 1), (500, 1), (1000, 2)]]
    pods = [PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(rng.randint(1, 40))]
    result = Scheduler().solve(
        SchedulingInput(pods=tuple(pods), existing=tuple(nodes), mode="kube-scheduler")
    )
    assert sorted(result.existing_placements) == sorted(_reference(nodes, pods))

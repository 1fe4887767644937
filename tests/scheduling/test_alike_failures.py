"""A pod that failed is not tried again for an alike pod (same template and volume terms)
until something is placed (``_Solve.run``): the answers equal those of a solve in which every
pod has its own (equal) template object, so no failure is shared."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm, TopologySpreadConstraint
from joiner.api.requirements import Requirements
from joiner.scheduling import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
)
from joiner.scheduling.costopt.solver import CostOptimalScheduler
from joiner.testing.builders import (
    GIB,
    make_existing_node,
    make_instance_type,
    make_nodepool,
    make_pod_template,
)

#: A NodePool of one small type (2 CPU, 4 GiB), only in us-east-1a.
SMALL = NodePoolTemplate(
    make_nodepool(), (make_instance_type("m5.large", cpu_m=2000, memory=4 * GIB),)
)


def _unshared(pods: list[PodRequest]) -> tuple[PodRequest, ...]:
    """The same pods, each with its own copy of its template (equal, not identical)."""
    return tuple(replace(p, template=replace(p.template)) for p in pods)


def _node(name: str, zone: str, cpu: int, mem_gib: int) -> ExistingNode:
    return make_existing_node(name, zone, cpu_m=cpu, memory=mem_gib * GIB, pods=20)


def _solve(pods, nodes, mode, pools=()):
    return Scheduler().solve(
        SchedulingInput(pods=tuple(pods), existing=tuple(nodes), nodepools=pools, mode=mode)
    )


@pytest.mark.parametrize("mode", ["kube-scheduler", "karpenter"])
@pytest.mark.parametrize("seed", range(20))
def test_shared_failures_give_the_answers_of_unshared_ones(seed, mode):
    rng = random.Random(seed)
    nodes = [
        _node(f"n{i}", rng.choice(["us-east-1a", "us-east-1b"]), rng.randint(0, 4000), 8)
        for i in range(rng.randint(1, 6))
    ]
    app = Requirements.from_labels({"app": "db"})
    templates = [
        make_pod_template(1500, 2 * GIB),
        make_pod_template(250, 1 * GIB),
        # Needs a db pod in its zone: fails until one is placed, then may fit.
        replace(make_pod_template(500, 1 * GIB), pod_affinity=(PodAffinityTerm(labels.ZONE, app),)),
        replace(make_pod_template(300, 1 * GIB), labels=(("app", "db"),)),
    ]
    pods = [PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(rng.randint(5, 40))]
    pools = (SMALL,) if mode == "karpenter" else ()
    shared = _solve(pods, nodes, mode, pools)
    alone = _solve(_unshared(pods), nodes, mode, pools)
    assert shared.existing_placements == alone.existing_placements
    assert shared.unschedulable == alone.unschedulable
    assert [c.pods for c in shared.new_nodeclaims] == [c.pods for c in alone.new_nodeclaims]


def test_a_placement_between_two_alike_pods_lets_the_second_try_again():
    # w-1 needs a db pod in its zone and fails; db-1 is placed; w-2 (w-1's template) then
    # fits: a failure shared past a placement would have left it pending.
    app = Requirements.from_labels({"app": "db"})
    web = replace(
        make_pod_template(500, 1 * GIB), pod_affinity=(PodAffinityTerm(labels.ZONE, app),)
    )
    db = replace(make_pod_template(300, 1 * GIB), labels=(("app", "db"),))
    pods = [PodRequest("w-1", web, 0), PodRequest("db-1", db, 1), PodRequest("w-2", web, 2)]
    result = _solve(pods, [_node("n0", "us-east-1a", 4000, 8)], "kube-scheduler")
    assert [u for u, _ in result.unschedulable] == ["w-1"]
    assert sorted(u for u, _ in result.existing_placements) == ["db-1", "w-2"]


def test_alike_pods_that_fit_nowhere_share_the_reason():
    big = make_pod_template(3000, 2 * GIB)
    pods = [PodRequest(f"b-{i}", big, i) for i in range(5)]
    result = _solve(pods, [_node("n0", "us-east-1a", 1000, 8)], "karpenter", pools=(SMALL,))
    reasons = {why for _, why in result.unschedulable}
    assert len(result.unschedulable) == 5 and len(reasons) == 1


def _only_in(zone: str, it):
    """``it`` with its offerings outside ``zone`` unavailable (the zones stay in its
    requirements, so a zone spread still counts them)."""
    return replace(it, offerings=tuple(replace(o, available=o.zone == zone) for o in it.offerings))


def test_cost_optimal_alike_failures_give_the_reasons_of_unshared_ones():
    # packing: cost-optimal tries each pod first on its own planned NodeClaim (by pod uid,
    # ``_CostSolve._try_claims``), so two alike pods with nothing placed between them can
    # fail on different paths with different reasons. p1 and p4 (the spread template) both
    # fail: tried, p4's reason starts with "topology spread on topology.kubernetes.io/zone
    # leave no allowed domain"; with p1's failure shared, p4 got p1's reason instead.
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    big = make_instance_type(
        "m2.2xlarge",
        cpu_m=8000,
        memory=32 * GIB,
        pods=8,
        prices={(z, "spot"): 0.135 for z in zones},
    )
    small = make_instance_type(
        "m3.large", cpu_m=2000, memory=16 * GIB, pods=4, prices={(z, "spot"): 0.042 for z in zones}
    )
    pool = NodePoolTemplate(
        make_nodepool("pool0", limits={"cpu": 20000}),
        (_only_in("us-east-1c", big), _only_in("us-east-1c", small)),
        remaining=(("cpu", 20000),),
    )
    a1 = Requirements.from_labels({"app": "a1"})
    a0 = Requirements.from_labels({"app": "a0"})
    spread = replace(
        make_pod_template(3000, 20 * GIB),
        labels=(("app", "a1"),),
        spread=(TopologySpreadConstraint(labels.ZONE, 1, a1),),
    )
    anti = replace(
        make_pod_template(100, 2 * GIB),
        labels=(("app", "a0"),),
        pod_anti_affinity=(PodAffinityTerm(labels.HOSTNAME, a0),),
    )
    pods = [PodRequest(f"p{i}", spread if c == "S" else anti, i) for i, c in enumerate("SSAASAAA")]
    inp = SchedulingInput(pods=tuple(pods), nodepools=(pool,))
    shared = CostOptimalScheduler().solve(inp)
    alone = CostOptimalScheduler().solve(replace(inp, pods=_unshared(pods)))
    assert [u for u, _ in alone.unschedulable] == ["p1", "p4"]
    assert shared.unschedulable == alone.unschedulable

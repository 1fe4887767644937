"""A node or NodeClaim that refuses a pod is dead for the rest of the solve only for pods it
would refuse alike: same template, relaxation step and volume terms. A pod's bound volume
adds its zone to the pod's node selection, so one replica of a StatefulSet with a volume in
zone b is refused by zone a's nodes, and a replica of the same template without that volume
is not (found by the breaker: the key lacked the volume terms, so the second pod was refused
by every node the first one was)."""

from __future__ import annotations

import pytest

from joiner.api import labels
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
)
from joiner.testing.builders import (
    GIB,
    make_existing_node,
    make_instance_type,
    make_nodepool,
    make_pod_template,
)

ZONE_B = (Requirements([Requirement.in_(labels.ZONE, "us-east-1b")]),)
ZONE_A = (Requirements([Requirement.in_(labels.ZONE, "us-east-1a")]),)


def _node(name: str, zone: str, cpu: int) -> ExistingNode:
    return make_existing_node(name, zone, cpu_m=cpu, memory=4 * GIB, pods=10)


@pytest.mark.parametrize("mode", ["kube-scheduler", "provisioner"])
def test_a_node_refusing_a_volume_still_takes_the_same_template_without_it(mode):
    t = make_pod_template(1000, GIB)
    pods = (PodRequest("with-volume", t, 0, ZONE_B), PodRequest("plain", t, 1))
    nodes = (_node("a00", "us-east-1a", 4000), _node("b00", "us-east-1b", 1000))
    got = Scheduler().solve(SchedulingInput(pods=pods, existing=nodes, mode=mode))
    assert dict(got.existing_placements) == {"with-volume": "b00", "plain": "a00"}
    assert got.unschedulable == ()


def test_a_nodeclaim_refusing_a_volume_still_takes_the_same_template_without_it():
    """NodeClaims are tried in order (fewest pods, then creation): the zone-a claim made for
    the first pod comes before the zone-b one, and the plain pod, refused by neither, joins
    the first."""
    zones = ("us-east-1a", "us-east-1b")
    big = make_instance_type(
        "m5.xlarge", cpu_m=4000, memory=16 * GIB, prices={(z, "on-demand"): 0.2 for z in zones}
    )
    pool = NodePoolTemplate(make_nodepool("pool0"), (big,))
    t = make_pod_template(1000, GIB)
    pods = (
        PodRequest("pv-a", t, 0, ZONE_A),
        PodRequest("pv-b", t, 1, ZONE_B),
        PodRequest("plain", t, 2),
    )
    got = Scheduler().solve(SchedulingInput(pods=pods, nodepools=(pool,)))
    claims = {c.pods: c for c in got.new_nodeclaims}
    assert sorted(claims) == [("pv-a", "plain"), ("pv-b",)]
    zone_of_claim = claims[("pv-a", "plain")].requirements.get(labels.ZONE)
    assert zone_of_claim is not None and set(zone_of_claim.values) == {"us-east-1a"}

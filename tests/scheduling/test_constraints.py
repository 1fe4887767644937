"""One test (or a few) per scheduling constraint, with kube-scheduler's arithmetic."""

from __future__ import annotations

from dataclasses import replace

import pytest

from joiner.api import labels
from joiner.api.objects import (
    SCHEDULE_ANYWAY,
    HostPort,
    PodAffinityTerm,
    Taint,
    TopologySpreadConstraint,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import (
    BoundPod,
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
)
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _type(name, cpu, price, zones=ZONES):
    prices = {}
    for z in zones:
        prices[(z, "on-demand")] = price
        prices[(z, "spot")] = price * 0.4
    return make_instance_type(name, cpu_m=cpu, memory=8 * GIB, pods=110, prices=prices)


TYPES = (
    _type("m5.large", 2000, 0.1),
    _type("m5.xlarge", 4000, 0.2),
    _type("m5.4xlarge", 16000, 0.8),
)
APP = Requirements.from_labels({"app": "web"})


def web(cpu=500, **kw):
    return replace(make_pod_template(cpu, GIB), labels=(("app", "web"),), **kw)


def solve(pods, pools=None, existing=(), bound=(), mode="provisioner", policy="Strict"):
    pools = pools if pools is not None else [NodePoolTemplate(make_nodepool(), TYPES)]
    return Scheduler().solve(
        SchedulingInput(
            pods=tuple(pods),
            existing=tuple(existing),
            nodepools=tuple(pools),
            bound_pods=tuple(bound),
            mode=mode,
            min_values_policy=policy,
        )
    )


def reqs(tmpl, n, prefix="p"):
    return [PodRequest(f"{prefix}-{i:03d}", tmpl, i) for i in range(n)]


def zone_of(claim):
    r = claim.requirements.get(labels.ZONE)
    assert r is not None and len(r.values) == 1, "a spread NodeClaim must be pinned to one zone"
    return next(iter(r.values))


def test_zonal_spread_max_skew_1_balances_zones():
    tmpl = web(spread=(TopologySpreadConstraint(labels.ZONE, 1, APP),))
    result = solve(reqs(tmpl, 6))
    per_zone: dict[str, int] = {}
    for c in result.new_nodeclaims:
        per_zone[zone_of(c)] = per_zone.get(zone_of(c), 0) + len(c.pods)
    assert sorted(per_zone.values()) == [2, 2, 2]
    assert set(per_zone) == set(ZONES)


def test_empty_zone_the_pool_allows_counts_zero():
    # Existing pods: 2 in zone a. The empty zones b and c must fill first.
    node = ExistingNode(
        name="n-a",
        labels=((labels.ZONE, "us-east-1a"), (labels.ARCH, "amd64")),
        taints=(),
        available={"cpu": 16000, "memory": 64 * GIB, "pods": 100},
        initialized=True,
    )
    bound = [BoundPod("n-a", "default", (("app", "web"),)) for _ in range(2)]
    tmpl = web(spread=(TopologySpreadConstraint(labels.ZONE, 1, APP),))
    result = solve(reqs(tmpl, 2), existing=[node], bound=bound)
    assert not result.existing_placements
    assert sorted(zone_of(c) for c in result.new_nodeclaims) == ["us-east-1b", "us-east-1c"]


def test_min_domains_treats_global_minimum_as_zero():
    # Only zone a allowed by the pool: one domain < minDomains 3, so min is 0 and maxSkew 1
    # admits at most one pod in zone a.
    pool = make_nodepool(requirements=[Requirement.in_(labels.ZONE, "us-east-1a")])
    tmpl = web(spread=(TopologySpreadConstraint(labels.ZONE, 1, APP, min_domains=3),))
    result = solve(reqs(tmpl, 3), pools=[NodePoolTemplate(pool, TYPES)])
    assert sum(len(c.pods) for c in result.new_nodeclaims) == 1
    assert len(result.unschedulable) == 2
    assert "topology spread" in result.unschedulable[0][1]


def test_hostname_spread_puts_at_most_max_skew_per_node():
    tmpl = web(spread=(TopologySpreadConstraint(labels.HOSTNAME, 2, APP),))
    result = solve(reqs(tmpl, 7))
    assert [len(c.pods) for c in result.new_nodeclaims] == [2, 2, 2, 1]


def test_schedule_anyway_is_relaxed_when_it_cannot_be_met():
    pool = make_nodepool(requirements=[Requirement.in_(labels.ZONE, "us-east-1a")])
    tmpl = web(
        spread=(
            TopologySpreadConstraint(
                labels.ZONE, 1, APP, when_unsatisfiable=SCHEDULE_ANYWAY, min_domains=3
            ),
        )
    )
    result = solve(reqs(tmpl, 3), pools=[NodePoolTemplate(pool, TYPES)])
    assert not result.unschedulable


def test_hostname_anti_affinity_needs_a_node_each():
    tmpl = web(pod_anti_affinity=(PodAffinityTerm(labels.HOSTNAME, APP),))
    result = solve(reqs(tmpl, 4))
    assert [len(c.pods) for c in result.new_nodeclaims] == [1, 1, 1, 1]


def test_zonal_self_affinity_keeps_pods_in_one_zone():
    tmpl = web(cpu=3000, pod_affinity=(PodAffinityTerm(labels.ZONE, APP),))
    result = solve(reqs(tmpl, 9))
    assert len({zone_of(c) for c in result.new_nodeclaims}) == 1
    assert sum(len(c.pods) for c in result.new_nodeclaims) == 9


def test_affinity_to_pods_that_do_not_exist_is_unschedulable():
    other = Requirements.from_labels({"app": "db"})
    tmpl = web(pod_affinity=(PodAffinityTerm(labels.ZONE, other),))
    result = solve(reqs(tmpl, 1))
    assert "pod affinity" in result.unschedulable[0][1]


def test_existing_pod_anti_affinity_repels_new_pods_from_its_zone():
    node = ExistingNode(
        name="n-a",
        labels=((labels.ZONE, "us-east-1a"),),
        taints=(),
        available={"cpu": 16000, "memory": 64 * GIB, "pods": 100},
        initialized=True,
    )
    guard = BoundPod(
        "n-a", "default", (("app", "db"),), anti_affinity=(PodAffinityTerm(labels.ZONE, APP),)
    )
    result = solve(reqs(web(), 3), existing=[node], bound=[guard])
    assert not result.existing_placements and not result.unschedulable
    # Every other zone stays open (Karpenter ``nextDomainAntiAffinity``), zone a does not.
    zones = [c.requirements.get(labels.ZONE) for c in result.new_nodeclaims]
    assert zones and all(z is not None and z.values == {"us-east-1b", "us-east-1c"} for z in zones)


def test_preferred_node_affinity_is_honoured_then_relaxed():
    prefer_b = Requirements([Requirement.in_(labels.ZONE, "us-east-1b")])
    tmpl = web(preferred_affinity=((50, prefer_b),))
    result = solve(reqs(tmpl, 1))
    assert zone_of(result.new_nodeclaims[0]) == "us-east-1b"
    prefer_nowhere = Requirements([Requirement.in_(labels.ZONE, "eu-west-1a")])
    relaxed = solve(reqs(web(preferred_affinity=((50, prefer_nowhere),)), 1))
    assert not relaxed.unschedulable and len(relaxed.new_nodeclaims) == 1


def test_prefer_no_schedule_taint_is_avoided_then_tolerated():
    soft = make_nodepool("soft", taints=[Taint("spot-only", "PreferNoSchedule")], weight=50)
    plain = make_nodepool("plain")
    both = [NodePoolTemplate(soft, TYPES), NodePoolTemplate(plain, TYPES)]
    assert solve(reqs(web(), 1), pools=both).new_nodeclaims[0].nodepool == "plain"
    only_soft = solve(reqs(web(), 1), pools=[NodePoolTemplate(soft, TYPES)])
    assert only_soft.new_nodeclaims[0].nodepool == "soft"


def test_host_ports_conflict_on_one_node():
    tmpl = web(host_ports=(HostPort(8080),))
    result = solve(reqs(tmpl, 3))
    assert [len(c.pods) for c in result.new_nodeclaims] == [1, 1, 1]
    udp = web(host_ports=(HostPort(8080, "UDP"),))
    mixed = solve([*reqs(tmpl, 1, "tcp"), *reqs(udp, 1, "udp")])
    assert len(mixed.new_nodeclaims) == 1


def test_volume_topology_pins_the_zone():
    pod = PodRequest(
        "p", web(), 0, volume_terms=(Requirements([Requirement.in_(labels.ZONE, "us-east-1c")]),)
    )
    result = solve([pod])
    assert zone_of(result.new_nodeclaims[0]) == "us-east-1c"


def test_min_values_strict_and_best_effort():
    pool = make_nodepool(
        requirements=[Requirement.new(labels.INSTANCE_TYPE, "Exists", (), min_values=3)]
    )
    big = web(cpu=10000)  # only m5.4xlarge fits: 1 distinct type < minValues 3
    strict = solve(reqs(big, 1), pools=[NodePoolTemplate(pool, TYPES)])
    assert "below minValues 3" in strict.unschedulable[0][1]
    relaxed = solve(reqs(big, 1), pools=[NodePoolTemplate(pool, TYPES)], policy="BestEffort")
    assert len(relaxed.new_nodeclaims) == 1


def test_strict_min_values_falls_through_to_the_next_pool():
    picky = make_nodepool(
        "picky",
        requirements=[Requirement.new(labels.INSTANCE_TYPE, "Exists", (), min_values=3)],
        weight=80,
    )
    fallback = make_nodepool("fallback")
    result = solve(
        reqs(web(cpu=10000), 1),
        pools=[NodePoolTemplate(picky, TYPES), NodePoolTemplate(fallback, TYPES)],
    )
    assert result.new_nodeclaims[0].nodepool == "fallback"


def test_kube_scheduler_mode_uses_least_allocated_nodes():
    def node(name, free):
        return ExistingNode(
            name=name,
            labels=(),
            taints=(),
            available={"cpu": free, "memory": 8 * GIB, "pods": 100},
            initialized=True,
            allocatable={"cpu": 4000, "memory": 8 * GIB, "pods": 100},
        )

    nodes = [node("a-busy", 1000), node("b-idle", 3500)]
    kube = solve(reqs(web(), 1), pools=[], existing=nodes, mode="kube-scheduler")
    first_fit = solve(reqs(web(), 1), pools=[], existing=nodes)
    assert kube.existing_placements == (("p-000", "b-idle"),)
    assert first_fit.existing_placements == (("p-000", "a-busy"),)


@pytest.mark.parametrize("key", [labels.CAPACITY_TYPE, "team"])
def test_spread_on_any_key(key):
    pool = make_nodepool(
        requirements=[Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")],
        node_labels=None,
    )
    pools = [NodePoolTemplate(pool, TYPES)]
    if key == "team":
        pools = [
            NodePoolTemplate(make_nodepool("a", node_labels={"team": "a"}), TYPES),
            NodePoolTemplate(make_nodepool("b", node_labels={"team": "b"}), TYPES),
        ]
    tmpl = web(spread=(TopologySpreadConstraint(key, 1, APP),))
    result = solve(reqs(tmpl, 4), pools=pools)
    values = []
    for c in result.new_nodeclaims:
        r = c.requirements.get(key)
        values += [next(iter(r.values))] * len(c.pods)
    assert sorted(values.count(v) for v in set(values)) == [2, 2]

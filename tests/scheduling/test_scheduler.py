"""Scheduler behaviour: tiers, resources, selectors, taints, DaemonSet overhead, weights, limits."""

from __future__ import annotations

from joiner.api import labels
from joiner.api.objects import Taint, Toleration
from joiner.api.requirements import Requirement
from joiner.scheduling import ExistingNode, NodePoolTemplate, Scheduler, SchedulingInput
from joiner.testing.builders import (
    GIB,
    make_instance_type,
    make_nodepool,
    make_pod_template,
    make_pods,
)

SMALL = make_instance_type("m5.large", cpu_m=2000, memory=8 * GIB)
LARGE = make_instance_type("m5.xlarge", cpu_m=4000, memory=16 * GIB)
ARM = make_instance_type("m6g.large", cpu_m=2000, memory=8 * GIB, arch="arm64")
GPU = make_instance_type(
    "g5.xlarge",
    cpu_m=4000,
    memory=16 * GIB,
    extra={"nvidia.com/gpu": 1},
    prices={("us-east-1a", "on-demand"): 1.0, ("us-east-1a", "spot"): 0.4},
)
TYPES = (SMALL, LARGE, ARM, GPU)


def solve(pods, pools=None, existing=(), daemonsets=()):
    pools = pools if pools is not None else [NodePoolTemplate(make_nodepool(), TYPES)]
    return Scheduler().solve(
        SchedulingInput(
            pods=pods,
            existing=tuple(existing),
            nodepools=tuple(pools),
            daemonsets=tuple(daemonsets),
        )
    )


def test_packs_pods_into_fewest_claims_and_keeps_cheapest_options_first():
    result = solve(make_pods(make_pod_template(1000, GIB), 4))
    assert len(result.new_nodeclaims) == 1
    claim = result.new_nodeclaims[0]
    assert len(claim.pods) == 4
    # 4 vCPU requested: only the 4-vCPU types fit; cheapest first.
    assert [it.name for it in claim.instance_types] == ["m5.xlarge", "g5.xlarge"]
    assert claim.requests["cpu"] == 4000


def test_pod_larger_than_every_type_is_unschedulable_with_reason():
    result = solve(make_pods(make_pod_template(64000, GIB), 1))
    assert not result.new_nodeclaims
    reason = result.reason("p-000")
    assert reason is not None and "has room for cpu=64000m" in reason


def test_node_selector_narrows_instance_types():
    tmpl = make_pod_template(500, GIB, node_selector={labels.ARCH: "arm64"})
    result = solve(make_pods(tmpl, 1))
    assert [it.name for it in result.new_nodeclaims[0].instance_types] == ["m6g.large"]


def test_required_node_affinity_terms_are_alternatives():
    tmpl = make_pod_template(
        500,
        GIB,
        affinity=[
            [Requirement.in_(labels.INSTANCE_FAMILY, "nope")],
            [Requirement.in_(labels.INSTANCE_FAMILY, "g5")],
        ],
    )
    result = solve(make_pods(tmpl, 1))
    assert [it.name for it in result.new_nodeclaims[0].instance_types] == ["g5.xlarge"]


def test_extended_resources_select_gpu_types():
    tmpl = make_pod_template(500, GIB, extra={"nvidia.com/gpu": 1})
    result = solve(make_pods(tmpl, 2))
    assert len(result.new_nodeclaims) == 2
    assert all(c.instance_types[0].name == "g5.xlarge" for c in result.new_nodeclaims)


def test_custom_label_not_defined_by_pool_is_incompatible():
    tmpl = make_pod_template(500, GIB, node_selector={"team": "a"})
    result = solve(make_pods(tmpl, 1))
    assert not result.new_nodeclaims
    assert "'team' does not have known values" in (result.reason("p-000") or "")


def test_pool_labels_satisfy_node_selector():
    pool = make_nodepool(node_labels={"team": "a"})
    tmpl = make_pod_template(500, GIB, node_selector={"team": "a"})
    result = solve(make_pods(tmpl, 1), pools=[NodePoolTemplate(pool, TYPES)])
    assert len(result.new_nodeclaims) == 1


def test_taints_need_tolerations():
    pool = make_nodepool(taints=[Taint("dedicated", "NoSchedule", "gpu")])
    pools = [NodePoolTemplate(pool, TYPES)]
    plain = solve(make_pods(make_pod_template(500, GIB), 1), pools=pools)
    assert "does not tolerate taint dedicated=gpu:NoSchedule" in (plain.reason("p-000") or "")
    tolerating = make_pod_template(
        500, GIB, tolerations=[Toleration("dedicated", "Equal", "gpu", "NoSchedule")]
    )
    assert len(solve(make_pods(tolerating, 1), pools=pools).new_nodeclaims) == 1


def test_prefer_no_schedule_taint_does_not_block():
    pool = make_nodepool(taints=[Taint("soft", "PreferNoSchedule")])
    result = solve(make_pods(make_pod_template(500, GIB), 1), pools=[NodePoolTemplate(pool, TYPES)])
    assert len(result.new_nodeclaims) == 1


def test_existing_capacity_is_used_before_new_claims():
    node = ExistingNode(
        name="node-a",
        labels=((labels.ARCH, "amd64"), (labels.INSTANCE_TYPE, "m5.xlarge")),
        taints=(),
        available={"cpu": 2500, "memory": 8 * GIB, "pods": 10},
        initialized=True,
    )
    result = solve(make_pods(make_pod_template(1000, GIB), 3), existing=[node])
    assert [n for _, n in result.existing_placements] == ["node-a", "node-a"]
    assert len(result.new_nodeclaims) == 1 and len(result.new_nodeclaims[0].pods) == 1


def test_initialized_nodes_are_tried_before_in_flight_ones():
    def node(name, initialized):
        return ExistingNode(
            name=name,
            labels=((labels.ARCH, "amd64"),),
            taints=(),
            available={"cpu": 4000, "memory": 8 * GIB, "pods": 10},
            initialized=initialized,
        )

    result = solve(
        make_pods(make_pod_template(1000, GIB), 1),
        existing=[node("a-inflight", False), node("b", True)],
    )
    assert result.existing_placements == (("p-000", "b"),)


def test_daemonset_overhead_sizes_the_node():
    # Each pod asks 1500m; a DaemonSet asks 600m: two pods + daemon = 3600m fit a 4-vCPU type,
    # but 2 pods + daemon do not fit a 2-vCPU type, and 1 pod + daemon (2100m) does not either.
    daemon = make_pod_template(600, GIB // 4)
    result = solve(make_pods(make_pod_template(1500, GIB), 2), daemonsets=[daemon])
    claim = result.new_nodeclaims[0]
    assert [it.name for it in claim.instance_types] == ["m5.xlarge", "g5.xlarge"]
    assert claim.requests["cpu"] == 3000 + 600


def test_daemonset_that_does_not_tolerate_pool_taint_adds_no_overhead():
    pool = make_nodepool(taints=[Taint("dedicated", "NoSchedule")])
    tolerating_pod = make_pod_template(1500, GIB, tolerations=[Toleration("dedicated", "Exists")])
    daemon = make_pod_template(600, GIB // 4)
    result = solve(
        make_pods(tolerating_pod, 1), pools=[NodePoolTemplate(pool, TYPES)], daemonsets=[daemon]
    )
    assert result.new_nodeclaims[0].requests["cpu"] == 1500


def test_higher_weight_pool_wins_even_when_pricier():
    cheap = make_nodepool("cheap", requirements=[Requirement.in_(labels.INSTANCE_TYPE, "m5.large")])
    pricey = make_nodepool(
        "pricey", requirements=[Requirement.in_(labels.INSTANCE_TYPE, "g5.xlarge")], weight=50
    )
    result = solve(
        make_pods(make_pod_template(500, GIB), 1),
        pools=[NodePoolTemplate(cheap, TYPES), NodePoolTemplate(pricey, TYPES)],
    )
    assert result.new_nodeclaims[0].nodepool == "pricey"


def test_equal_weight_pools_are_tried_by_name_descending():
    """Karpenter ``OrderByWeight``: equal weights by name, descending, so "general" comes
    before "batch" even when batch is cheaper (diff-karpenter case taint-two-pools)."""
    batch = make_nodepool("batch", requirements=[Requirement.in_(labels.INSTANCE_TYPE, "m5.large")])
    general = make_nodepool(
        "general", requirements=[Requirement.in_(labels.INSTANCE_TYPE, "g5.xlarge")]
    )
    for pools in ([batch, general], [general, batch]):
        result = solve(
            make_pods(make_pod_template(500, GIB), 1),
            pools=[NodePoolTemplate(p, TYPES) for p in pools],
        )
        assert result.new_nodeclaims[0].nodepool == "general"


def test_limits_are_accounted_pessimistically():
    pool = make_nodepool(limits={"cpu": 6000})
    # Each pod needs its own 4-vCPU node; the first claim subtracts 4000m (its largest option),
    # leaving 2000m: the second pod fits no type under the limit.
    result = solve(
        make_pods(make_pod_template(3000, GIB), 2),
        pools=[NodePoolTemplate(pool, TYPES, (("cpu", 6000),))],
    )
    assert len(result.new_nodeclaims) == 1
    assert "limits leave 2 of its 4 instance types" in (result.reason("p-001") or "")


def test_nodes_limit_stops_new_claims_only_when_existing_nodes_reach_it():
    """Karpenter's ``subtractMax`` charges a new NodeClaim only the resources its instance
    types list, never a node: within one run a ``nodes: 1`` limit with no node yet lets
    both NodeClaims through (diff-karpenter's ``limits-nodes``: four NodeClaims under
    ``nodes: 2``), while existing nodes that already reach it stop every new one."""
    pool = make_nodepool(limits={"nodes": 1})
    pods = make_pods(make_pod_template(3000, GIB), 2)
    result = solve(pods, pools=[NodePoolTemplate(pool, TYPES, (("nodes", 1),))])
    assert len(result.new_nodeclaims) == 2
    reached = solve(pods, pools=[NodePoolTemplate(pool, TYPES, (("nodes", 0),))])
    assert reached.new_nodeclaims == ()
    assert "limit nodes=1 is reached" in (reached.reason("p-001") or "")


def test_queue_order_is_largest_cpu_first_and_deterministic():
    big = make_pod_template(3000, GIB)
    small = make_pod_template(500, GIB)
    pods = (*make_pods(small, 2, "small"), *make_pods(big, 1, "big"))
    a = solve(pods)
    b = solve(tuple(reversed(pods)))
    assert a.new_nodeclaims[0].pods[0] == "big-000"
    assert a == b


def test_no_nodepool_reason():
    result = solve(make_pods(make_pod_template(), 1), pools=[])
    assert result.reason("p-000") == "no NodePool is defined"


def test_pool_without_launchable_types_explains_itself():
    pool = make_nodepool(requirements=[Requirement.in_(labels.INSTANCE_TYPE, "x9.huge")])
    result = solve(make_pods(make_pod_template(), 1), pools=[NodePoolTemplate(pool, TYPES)])
    assert "has no instance type with an available offering" in (result.reason("p-000") or "")


def test_tolerate_everything_daemonset_adds_overhead_on_tainted_pool():
    pool = make_nodepool(taints=[Taint("dedicated", "NoSchedule", "gpu")])
    everywhere = make_pod_template(600, GIB // 4, tolerations=[Toleration(operator="Exists")])
    pod = make_pod_template(1500, GIB, tolerations=[Toleration("dedicated", "Exists")])
    result = solve(
        make_pods(pod, 1), pools=[NodePoolTemplate(pool, TYPES)], daemonsets=[everywhere]
    )
    assert result.new_nodeclaims[0].requests["cpu"] == 1500 + 600


def test_daemonset_with_node_affinity_only_counts_where_it_runs():
    arm_only = make_pod_template(1500, GIB // 4, node_selector={labels.ARCH: "arm64"})
    result = solve(make_pods(make_pod_template(1000, GIB), 1), daemonsets=[arm_only])
    claim = result.new_nodeclaims[0]
    # On amd64 types the arm64 DaemonSet adds nothing; m5.large (2 vCPU) still fits.
    assert claim.instance_types[0].name == "m5.large"
    # The arm type would need 1000 + 1500 > 2000: it is not an option.
    assert "m6g.large" not in [it.name for it in claim.instance_types]

"""The static NodePool rules (``scheduling.static``): Karpenter's static provisioning count
with ``limits.nodes``, the scale-down count and order, StaticDrift's allowance, the gate."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import labels
from joiner.api.nodepools import NodePool
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling.static import (
    Member,
    PoolCount,
    deprovision_order,
    drift_replacements,
    gate_warnings,
    gated,
    template_claim,
    to_deprovision,
    to_provision,
)
from joiner.testing.builders import make_instance_type, make_nodepool


def _pool(replicas: int | None = 3, nodes: int | None = None) -> NodePool:
    pool = replace(make_nodepool("fixed"), replicas=replicas)
    return replace(pool, limits=(("nodes", nodes),)) if nodes is not None else pool


def test_provisioning_creates_what_is_missing_up_to_the_node_limit() -> None:
    assert to_provision(_pool(3), PoolCount(active=0)) == 3
    assert to_provision(_pool(3), PoolCount(active=1)) == 2
    # limits.nodes counts every NodeClaim of the pool, deleting ones too.
    assert to_provision(_pool(3, nodes=2), PoolCount(active=0)) == 2
    assert to_provision(_pool(3, nodes=2), PoolCount(active=1, deleting=1)) == 0
    # Pending-disruption NodeClaims count towards replicas: nothing while they reach it.
    assert to_provision(_pool(3), PoolCount(active=2, pending_disruption=1)) == 0
    assert to_provision(_pool(None), PoolCount(active=0)) == 0


def test_deprovisioning_deletes_the_surplus_in_upstream_order() -> None:
    assert to_deprovision(_pool(1), PoolCount(active=3)) == 2
    assert to_deprovision(_pool(3), PoolCount(active=3)) == 0
    members = [
        Member("busy", resolved=True, cost=2.0),
        Member("calm", resolved=True, cost=1.0),
        Member("guarded", resolved=True, do_not_disrupt=True, cost=0.0),
        Member("idle", resolved=True, empty=True),
        Member("launching", resolved=False),
    ]
    # No provider id first, then empty nodes, then cheapest, do-not-disrupt last.
    assert deprovision_order(members, 5) == ["launching", "idle", "calm", "busy", "guarded"]
    assert deprovision_order(members, 2) == ["launching", "idle"]


def test_static_drift_waits_for_a_scale_down_and_keeps_to_the_limits() -> None:
    assert drift_replacements(_pool(2), PoolCount(active=2), budget=1, drifted=2) == 1
    assert drift_replacements(_pool(2), PoolCount(active=3), budget=5, drifted=1) == 0
    assert drift_replacements(_pool(2), PoolCount(active=2), budget=0, drifted=1) == 0
    assert drift_replacements(_pool(2, nodes=2), PoolCount(active=2), budget=1, drifted=1) == 0


def test_the_template_claim_offers_every_allowed_type_cheapest_first() -> None:
    pool = replace(_pool(), requirements=Requirements([Requirement.in_(labels.ARCH, "amd64")]))
    big = make_instance_type("m5.2xlarge", cpu_m=8000, memory=32 << 30)
    small = make_instance_type("m5.large", cpu_m=2000, memory=8 << 30)
    arm = make_instance_type("m6g.large", cpu_m=2000, memory=8 << 30, arch="arm64")
    new = template_claim(pool, [big, arm, small])
    assert new.pods == () and new.requests == {} and new.nodepool == "fixed"
    # Not narrowed to what pods need (there are none): every allowed type, cheapest first.
    assert [it.name for it in new.instance_types] == ["m5.large", "m5.2xlarge"]


def test_with_the_gate_off_replicas_are_dropped_and_warned_about() -> None:
    static, dynamic = _pool(3), _pool(None)
    assert [p.replicas for p in gated([static, dynamic], False)] == [None, None]
    assert gated([static], True) == [static]
    (warning,) = gate_warnings([static, dynamic], False)
    assert "StaticCapacity feature gate is off" in warning
    assert "--feature-gates StaticCapacity=true" in warning
    assert gate_warnings([static], True) == []

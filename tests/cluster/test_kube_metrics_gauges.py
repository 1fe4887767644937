"""The gauges Joiner's controller derives from its cluster state and from the cloud's
instance types, with Karpenter's values: NodePool cost, cluster utilization, instance type
vCPUs/memory, offering availability and price."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from joiner.api.labels import INSTANCE_CPU, INSTANCE_MEMORY
from joiner.cloudprovider.types import InsufficientCapacityError
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.metrics import MeteredCloudProvider, Metrics
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.operator.kube_metrics import MetricsWiring
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _doc, _pod
from tests.cluster.test_kube_metrics import _launched_claim
from tests.manifests import unschedulable


def _static_node(name: str) -> dict[str, Any]:
    return _doc(
        kube.NODE,
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux"}},
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
            "status": {
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "20"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    )


def test_utilization_is_pod_requests_over_allocatable_of_live_nodes() -> None:
    """Karpenter ``buildClusterUtilizationMetric``: summed requests over summed allocatable,
    percent, per resource with an allocatable; a deleted node no longer counts."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.sync(kube.NODE, _static_node("n1"), _static_node("n2"))
    h.sync(kube.POD, _pod("a", "u1", node="n1"), _pod("b", "u2", node="n1"))
    h.feed.start()
    metrics = Metrics()
    metrics.update_cluster_state(h.state, synced=True)
    value = metrics.registry.get_sample_value
    name = "karpenter_cluster_utilization_percent"
    assert value(name, {"resource_type": "cpu"}) == 50  # 2 cores of 4
    assert value(name, {"resource_type": "memory"}) == 0
    # Karpenter's pod requests count each pod as 1 ``pods`` (``RequestsForPods``).
    assert value(name, {"resource_type": "pods"}) == 5  # 2 pods of 40
    h.feed.deliver(kube.NODE, "DELETED", [_static_node("n2")])
    metrics.update_cluster_state(h.state, synced=True)
    assert value(name, {"resource_type": "cpu"}) == 100  # 2 cores of 2


def test_nodepool_cost_is_the_launched_claims_offering_price() -> None:
    """Karpenter ``ClusterCost``: the offering price of each launched NodeClaim of the pool,
    USD per hour; gone once the NodeClaim is deleted."""
    h = Harness()
    metrics = Metrics()
    claim = _launched_claim(h, metrics)
    assert claim.instance is not None
    metrics.update_cluster_state(h.state, synced=True)
    value = metrics.registry.get_sample_value
    cost = value("karpenter_nodepools_cost_total", {"nodepool": "pool"})
    assert cost == pytest.approx(claim.instance.offering.price_per_hour) and cost > 0
    claim.deleted_at_s = 1.0
    metrics.update_cluster_state(h.state, synced=True)
    assert value("karpenter_nodepools_cost_total", {"nodepool": "pool"}) == 0


def test_get_instance_types_sets_the_instance_type_and_offering_gauges() -> None:
    """karpenter-provider-aws: vCPUs and memory (EC2's MiB in bytes) per type; availability
    (1/0) and price per (type, capacity type, zone)."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.feed.start()
    metrics = Metrics()
    types = MeteredCloudProvider(h.cloud, metrics, "simulated").get_instance_types("nc")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in metrics.registry.collect()
        for s in family.samples
    }

    def value(name: str, labels: dict[str, str]) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    assert len(types) > 10
    for it in types:
        cpu = value("karpenter_cloudprovider_instance_type_cpu_cores", {"instance_type": it.name})
        assert cpu == float(it.label(INSTANCE_CPU) or "nan") and cpu >= 1
        memory = "karpenter_cloudprovider_instance_type_memory_bytes"
        memory_mib = float(it.label(INSTANCE_MEMORY) or "nan")
        assert value(memory, {"instance_type": it.name}) == memory_mib * 2**20
        for o in it.offerings:
            labels = {"instance_type": it.name, "capacity_type": o.capacity_type, "zone": o.zone}
            available = value("karpenter_cloudprovider_instance_type_offering_available", labels)
            assert available == (1 if o.available else 0)
            price = value("karpenter_cloudprovider_instance_type_offering_price_estimate", labels)
            assert price == pytest.approx(o.price_per_hour)


def test_a_failed_get_instance_types_sets_no_gauge() -> None:
    class _Failing:
        def get_instance_types(self, _node_class: str) -> list[Any]:
            raise InsufficientCapacityError("none")

    metrics = Metrics()
    with pytest.raises(InsufficientCapacityError):
        MeteredCloudProvider(_Failing(), metrics, "simulated").get_instance_types("nc")
    body = metrics.exposition().decode()
    assert "karpenter_cloudprovider_instance_type_cpu_cores{" not in body
    errors = {"controller": "", "method": "GetInstanceTypes", "provider": "simulated"}
    errors["error"] = "InsufficientCapacityError"
    assert metrics.registry.get_sample_value("karpenter_cloudprovider_errors_total", errors) == 1


def test_disruption_budgets_per_nodepool_and_reason() -> None:
    """Karpenter ``BuildDisruptionBudgetMapping``: the active budgets' allowance per reason
    (the reason not lower-cased) and the nodes already disrupting."""
    h = Harness()
    pool_doc = copy.deepcopy(NODEPOOL)
    pool_doc["spec"]["disruption"] = {
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "5"}, {"nodes": "0", "reasons": ["Drifted"]}],
    }
    h.sync(kube.NODEPOOL, pool_doc)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.feed.start()
    metrics = Metrics()
    ctx: Any = SimpleNamespace(state=h.state, now=datetime(2026, 1, 1, tzinfo=UTC))
    MetricsWiring(metrics, h.state).disruption_pass(ctx, [])
    value = metrics.registry.get_sample_value
    allowed = "karpenter_nodepools_allowed_disruptions"
    assert value(allowed, {"nodepool": "pool", "reason": "Empty"}) == 5
    assert value(allowed, {"nodepool": "pool", "reason": "Drifted"}) == 0
    assert value(allowed, {"nodepool": "pool", "reason": "Underutilized"}) == 5
    consuming = "karpenter_nodepools_nodes_consuming_budgets"
    assert value(consuming, {"nodepool": "pool", "reason": "Empty"}) == 0


def _with_a_huge_pod() -> tuple[Harness, dict[str, Any]]:
    """A feed with NodePool ``pool`` and no nodes, not started, and a pod asking 1000
    cores that kube-scheduler refused (no pod synced yet)."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    huge = unschedulable(_pod("huge", "u1"))
    huge["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000"
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    return h, huge


def test_unschedulable_pods_after_a_provisioning_pass() -> None:
    """Karpenter ``UnschedulablePodsCount``: the pending pods the pass could not schedule
    (a pod asking 1000 cores), controller ``provisioner``; the schedulable one is not."""
    h, huge = _with_a_huge_pod()
    h.sync(kube.POD, huge, unschedulable(_pod("small", "u2")))
    h.feed.start()
    Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0)).reconcile()
    assert len(h.state.nodeclaims) == 1  # for the small pod
    metrics = Metrics()
    MetricsWiring(metrics, h.state).provisioned()
    value = metrics.registry.get_sample_value
    name = "karpenter_scheduler_unschedulable_pods_count"
    assert value(name, {"controller": "provisioner"}) == 1


def test_a_pod_seen_pending_observes_its_time_to_binding() -> None:
    """Karpenter ``PodBoundDurationSeconds``: creation (as the feed first saw the pod) to
    binding, through the feed's ``on_bound``; a pod first seen bound observes nothing. Pod
    ``a`` is bound by kube-scheduler without being found unschedulable first: no demand,
    but Karpenter's pod metrics time every pod seen ``Pending``."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    refused = unschedulable(_pod("c", "u3"))
    h.sync(kube.POD, _pod("a", "u1"), _pod("b", "u2", node="n0"), refused)
    metrics = Metrics()
    wiring = MetricsWiring(metrics, h.state)
    h.feed.on_seen_unbound.append(wiring.pending)
    h.feed.on_bound.append(wiring.bound)
    h.feed.start()
    h.clock.run_until(h.clock.now() + 7.5)
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])
    assert set(h.state.pods) == {"u1", "u2", "u3"} and h.pending == ["c"]
    h.clock.run_until(h.clock.now() + 2.5)
    refused["spec"]["nodeName"] = "n1"
    h.feed.deliver(kube.POD, "MODIFIED", [refused])
    value = metrics.registry.get_sample_value
    assert value("karpenter_pods_bound_duration_seconds_count", {}) == 2
    assert value("karpenter_pods_bound_duration_seconds_sum", {}) == 7.5 + 10


def test_a_pod_nominated_after_a_pass_left_it_unschedulable_is_no_longer_counted() -> None:
    """A preemptor kube-scheduler nominated is out of the next pass (``IsPreempting``), so
    ``UnschedulablePodsCount`` no longer counts it, even when that pass has nothing to
    schedule; binding clears it the same way."""
    h, huge = _with_a_huge_pod()
    h.sync(kube.POD, huge)
    h.feed.start()
    provisioner = Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0))
    metrics = Metrics()
    wiring = MetricsWiring(metrics, h.state)
    name = "karpenter_scheduler_unschedulable_pods_count"
    provisioner.reconcile()
    wiring.provisioned()
    assert metrics.registry.get_sample_value(name, {"controller": "provisioner"}) == 1
    nominated = copy.deepcopy(huge)
    nominated["status"]["nominatedNodeName"] = "n1"
    h.feed.deliver(kube.POD, "MODIFIED", [nominated])
    provisioner.reconcile()
    wiring.provisioned()
    assert metrics.registry.get_sample_value(name, {"controller": "provisioner"}) == 0

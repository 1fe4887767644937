"""Controller mode: a live Node's readiness and cordon reach the budgets and the scheduling
view even before the API shows the node lifecycle controller's taints."""

from __future__ import annotations

from typing import Any

from joiner.cluster.kube import client as kube
from joiner.controllers.disruption.budgets import pool_counts
from joiner.state.cluster import NodeClaim
from tests.cluster.test_kube_adapter import Harness, _doc


def _initialized_node(h: Harness) -> tuple[NodeClaim, dict[str, Any]]:
    """A launched NodeClaim of pool ``pool`` whose Node registered Ready and initialized."""
    claim = h.launched_claim()
    assert claim.instance is not None
    node = {
        "metadata": {"name": "pool-abcde"},
        "spec": {"providerID": claim.instance.provider_id},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    h.feed.deliver(kube.NODE, "ADDED", [_doc(kube.NODE, node)])
    assert claim.initialized_at_s is not None
    return claim, node


def test_a_node_going_not_ready_is_tainted_and_counts_as_disrupting() -> None:
    h = Harness()
    _, node = _initialized_node(h)
    assert pool_counts(h.state, "pool") == (1, 0)
    node["status"]["conditions"][0]["status"] = "Unknown"  # kubelet stopped posting
    h.feed.deliver(kube.NODE, "MODIFIED", [_doc(kube.NODE, node)])
    st_node = h.state.nodes["pool-abcde"]
    assert not st_node.ready
    assert [str(t) for t in st_node.taints] == ["node.kubernetes.io/unreachable:NoSchedule"]
    assert pool_counts(h.state, "pool") == (1, 1)


def test_a_cordoned_managed_node_carries_the_unschedulable_taint() -> None:
    h = Harness()
    _, node = _initialized_node(h)
    node["spec"]["unschedulable"] = True
    h.feed.deliver(kube.NODE, "MODIFIED", [_doc(kube.NODE, node)])
    taints = [str(t) for t in h.state.nodes["pool-abcde"].taints]
    assert taints == ["node.kubernetes.io/unschedulable:NoSchedule"]

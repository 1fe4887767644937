"""Controller mode: a pod's ``terminationGracePeriodSeconds`` reaches the state from the API,
and the Terminator's deletions under a NodePool ``terminationGracePeriod`` are DELETEs with
the remaining grace as ``gracePeriodSeconds`` (Karpenter ``terminator.go``
``DeleteExpiringPods``)."""

from __future__ import annotations

from typing import Any

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from joiner.cluster.kube import client as kube
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.metrics import Metrics
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _pod
from tests.cluster.test_kube_metrics import _claim_for_reason, _node


class Client:
    """Records pod deletions and evictions."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None, Any]] = []

    def delete(self, res: Any, name: str, **kw: Any) -> None:
        self.calls.append(("delete", name, kw.get("namespace"), kw.get("grace_period")))

    def create(self, obj: Any, **kw: Any) -> None:
        self.calls.append(("evict", kw["name"], kw.get("namespace"), None))


def _harness() -> Harness:
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    graced = _pod("a", "u1", node="n1")
    graced["spec"]["terminationGracePeriodSeconds"] = 45
    h.sync(kube.POD, graced, _pod("b", "u2", node="n1"))
    h.feed.start()
    return h


def test_the_feed_carries_each_pods_grace_period_30_when_unset():
    h = _harness()
    assert h.state.pods["u1"].template.termination_grace_period_s == 45
    assert h.state.pods["u2"].template.termination_grace_period_s == 30


def test_a_forced_eviction_is_a_delete_with_the_given_grace():
    h = _harness()
    client = Client()
    actuator = KubeActuator(
        client,  # type: ignore[arg-type]
        h.state,
        h.feed,
        h.lifecycle,
        Metrics(),
        create_nodes=True,
        dry_run=False,
    )
    assert actuator.evict(h.state.pods["u1"], True, 12)
    assert actuator.evict(h.state.pods["u2"], False)
    assert client.calls == [("delete", "a", "ns", 12), ("evict", "b", "ns", None)]


def test_dry_run_reports_the_deletions_grace():
    h = _harness()
    report: list[dict[str, Any]] = []
    actuator = KubeActuator(
        None,
        h.state,
        h.feed,
        h.lifecycle,
        Metrics(),
        create_nodes=True,
        dry_run=True,
        report=report.append,
    )
    assert actuator.evict(h.state.pods["u1"], True, 12)
    assert report == [{"action": "evict", "pod": "ns/a", "forced": True, "gracePeriodSeconds": 12}]


class _RefusingClient(Client):
    """Answers the Eviction of pod ``b`` with 429 (a PodDisruptionBudget)."""

    def create(self, obj: Any, **kw: Any) -> None:
        if kw["name"] == "b":
            raise ApiError(status=Status(code=429, message="violates a PDB"))
        super().create(obj, **kw)


def test_evictions_count_by_status_code_and_drained_pods_by_disruption_reason():
    """Karpenter's eviction queue: each Eviction request by its answer's code; each pod
    evicted by its node's NodeClaim disruption reason, ``Forceful Termination`` without
    one, ``""`` on a node without a NodeClaim; a forced deletion is no eviction."""
    h = _harness()
    metrics = Metrics()
    actuator = KubeActuator(
        _RefusingClient(),  # type: ignore[arg-type]
        h.state,
        h.feed,
        h.lifecycle,
        metrics,
        create_nodes=True,
        dry_run=False,
    )
    assert actuator.evict(h.state.pods["u1"], False)  # n1 has no NodeClaim
    assert not actuator.evict(h.state.pods["u2"], False)
    assert actuator.evict(h.state.pods["u1"], True, 5)
    value = metrics.registry.get_sample_value
    assert value("karpenter_pods_eviction_requests_total", {"code": "200"}) == 1
    assert value("karpenter_pods_eviction_requests_total", {"code": "429"}) == 1
    assert value("karpenter_pods_drained_total", {"reason": ""}) == 1
    claim = _claim_for_reason(disruption_reason="Underutilized")
    h.state.nodeclaims[claim.name] = claim
    node = h.state.nodes["n1"] = _node("n1", claim.name)
    node.deleted_at_s = 1.0  # no taint to sync before the eviction
    assert actuator.evict(h.state.pods["u1"], False)
    claim.disruption_reason = None
    assert actuator.evict(h.state.pods["u1"], False)
    assert value("karpenter_pods_drained_total", {"reason": "Underutilized"}) == 1
    assert value("karpenter_pods_drained_total", {"reason": "Forceful Termination"}) == 1
    assert value("karpenter_pods_eviction_requests_total", {"code": "200"}) == 3

"""Controller mode: a pod's ``terminationGracePeriodSeconds`` reaches the state from the API,
and the Terminator's deletions under a NodePool ``terminationGracePeriod`` are DELETEs with
the remaining grace as ``gracePeriodSeconds`` (Karpenter ``terminator.go``
``DeleteExpiringPods``)."""

from __future__ import annotations

from typing import Any

from joiner.cluster.kube import client as kube
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.metrics import Metrics
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _pod


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

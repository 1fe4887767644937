"""Controller mode follows a running pod's ``karpenter.sh/do-not-disrupt`` and
``controller.kubernetes.io/pod-deletion-cost`` as they change (``kubectl annotate`` on a
running pod): Karpenter reads the pod as it is at each disruption pass."""

from __future__ import annotations

from joiner.cluster.kube import client as kube
from joiner.controllers.disruption.candidates import eviction_cost
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _pod

DND = "karpenter.sh/do-not-disrupt"
COST = "controller.kubernetes.io/pod-deletion-cost"


def test_feed_follows_annotations_set_and_removed_on_a_running_pod() -> None:
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.sync(kube.POD, _pod("a", "u1", node="n1"))
    h.feed.start()
    pod = h.state.pods["u1"]
    assert not pod.blocks_disruption(0.0) and eviction_cost(pod) == 1.0
    annotated = _pod("a", "u1", node="n1", annotations={DND: "true", COST: str(2**27)})
    generation = h.state.generation
    h.feed.deliver(kube.POD, "MODIFIED", [annotated])
    assert pod.blocks_disruption(0.0) and eviction_cost(pod) == 2.0
    assert h.state.generation > generation
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])
    assert not pod.blocks_disruption(0.0) and eviction_cost(pod) == 1.0

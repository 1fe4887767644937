"""NodeClaims of a dump counted as in-flight capacity (``operator/plan.py`` ``_in_flight``):
one is registered when its ``status.providerID`` is a live Node's, and one sharing another's
providerID is not counted twice, as Karpenter's cluster state keeps one node per providerID
(``pkg/controllers/state/cluster.go`` ``Cluster.UpdateNodeClaim``)."""

from __future__ import annotations

from joiner.api.plan_output import Plan
from tests.manifests import deployment, existing_node, on_demand_plan

#: A full node: no room for the pending pod.
_FULL = existing_node("{cpu: 100m, memory: 1Gi, pods: '29'}")

_POD = "      containers: [{name: c, resources: {requests: {cpu: '1', memory: 1Gi}}}]\n"


def _claim(name: str, node_name: str | None) -> str:
    """A launched NodeClaim of ``general`` with the Node ``old``'s instance and room for
    the pod; ``node_name`` its ``status.nodeName`` (None: not written yet)."""
    node = f", nodeName: {node_name}" if node_name else ""
    return f"""---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  labels: {{karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand,
    node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a}}
spec:
  nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
  requirements: []
status: {{providerID: 'aws:///us-east-1a/i-old', allocatable: {{cpu: 3900m, memory: 14Gi,
  pods: '58'}}{node}}}
"""


def _plan(claims: str) -> Plan:
    return on_demand_plan(_FULL + claims + "---\n" + deployment(_POD))


def test_a_nodeclaim_whose_provider_id_is_a_nodes_is_registered_not_in_flight() -> None:
    """Its nodeName not written yet, but its instance is the Node ``old``: no room beyond
    the Node's, so the pod gets a new NodeClaim (it was placed on the NodeClaim)."""
    plan = _plan(_claim("general-b", None))
    assert plan.placements == []
    assert [c.pods for c in plan.nodeClaims] == [["default/web-1"]]


def test_a_nodeclaim_sharing_another_ones_provider_id_is_not_counted_again() -> None:
    plan = _plan(_claim("general-a", "old") + _claim("general-b", None))
    assert plan.placements == []
    assert [c.pods for c in plan.nodeClaims] == [["default/web-1"]]
    (warning,) = [w for w in plan.warnings if "providerID" in w]
    assert "general-b (aws:///us-east-1a/i-old, as general-a)" in warning
    assert warning.startswith("1 NodeClaim with the status.providerID of another")
    assert ") is not counted: general-b" in warning


def test_each_nodeclaim_sharing_a_provider_id_is_named_and_counted_once() -> None:
    """Three NodeClaims of one instance not registered yet: the first by name is the
    in-flight room the pod is placed on; the two others are named (the warning said
    "are" for one NodeClaim too)."""
    same = "".join(_claim(n, None).replace("i-old", "i-new") for n in ("c", "a", "b"))
    plan = _plan(same)
    assert [(p.pod, p.node) for p in plan.placements] == [("default/web-1", "a")]
    assert plan.nodeClaims == []
    (warning,) = [w for w in plan.warnings if "providerID" in w]
    assert warning.startswith("2 NodeClaims with the status.providerID of another")
    assert warning.endswith(
        "are not counted: b (aws:///us-east-1a/i-new, as a), c (aws:///us-east-1a/i-new, as a)"
    )

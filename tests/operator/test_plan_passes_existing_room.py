"""A later provisioning pass of ``joiner plan`` sees an existing node's room less what the
earlier passes placed there (``operator/plan_passes.py`` ``charge_placed``).

The regression (generated differential case gen-606-15): an existing node of ``pods: 4``
running two pods; the first pass placed two more there (a 1700m pod and one of three pods
with required hostname affinity to a pod on that node), left the other two pending and
launched a NodeClaim for the rest; the second pass rebuilt the node's room from the dump
alone and placed the two there too, six pods on a node of four (and 10Gi of requests on
8182Mi). Karpenter left the two pending."""

from __future__ import annotations

from joiner.api.manifests import load_text
from joiner.cloudprovider.catalog import Catalog
from joiner.operator.plan import build_plan
from tests.manifests import EC2NODECLASS, existing_node, nodepool

_NODE = "\n" + existing_node('{cpu: 1900m, memory: 7Gi, pods: "MAX"}')


def _pod(name: str, app: str, cpu: str, *, node: str = "", affinity: str = "") -> str:
    bound = f"  nodeName: {node}\n" if node else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop, labels: {{app: {app}}}}}
spec:
{bound}{affinity}  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}}}]
{"status: {phase: Running}" if node else ""}
"""


_WITH_DB = (
    "  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
    "[{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}]}}\n"
)


def _plan(max_pods: int) -> tuple[list[str], list[str], int]:
    """The node ``old`` (``pods: max_pods``) runs ``db`` and ``cache``; pending: three
    100m pods that must join ``db``'s node and a 1500m pod whose room is too small there
    (the first pass launches a NodeClaim for it, so a second pass runs). Returns the pods
    placed on ``old``, the pods left pending, and the pods on new NodeClaims."""
    text = (
        nodepool("[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]")
        + "---\n"
        + EC2NODECLASS
        + "---\n"
        + _NODE.replace("MAX", str(max_pods))
        + _pod("db", "db", "500m", node="old")
        + _pod("cache", "cache", "500m", node="old")
        + _pod("big", "big", "1500m")
        + "".join(_pod(f"near-{i}", "near", "100m", affinity=_WITH_DB) for i in range(3))
    )
    plan = build_plan(load_text(text), Catalog.load(), "us-east-1")
    on_old = sorted(p.pod.removeprefix("shop/") for p in plan.placements if p.node == "old")
    pending = sorted(u.pod.removeprefix("shop/") for u in plan.unschedulable)
    return on_old, pending, sum(len(c.pods) for c in plan.nodeClaims)


def test_a_later_pass_does_not_overfill_an_existing_nodes_pods() -> None:
    """``pods: 3`` with two running: the first pass places one ``near`` pod there (the
    third pod), launches a NodeClaim for ``big`` and leaves two ``near`` pending; the
    second pass must see the node full (Karpenter ``ExistingNode.CanAdd`` fits the pod
    count too), so the two stay pending rather than make five pods on a node of three."""
    on_old, pending, on_claims = _plan(max_pods=3)
    assert on_old == ["near-0"]
    assert pending == ["near-1", "near-2"]
    assert on_claims == 1


def test_with_room_for_all_every_near_pod_joins_the_node() -> None:
    """The same cluster with ``pods: 5``: all three ``near`` pods fit in the first pass, so
    the count of the test above comes from the node's pod limit, not from the affinity."""
    on_old, pending, on_claims = _plan(max_pods=5)
    assert on_old == ["near-0", "near-1", "near-2"]
    assert pending == []
    assert on_claims == 1

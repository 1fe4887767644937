"""The provisioning passes after a plan's first: what a pass left pending is solved again
with the NodeClaims it launched in flight.

Karpenter's provisioner requeues at once after creating NodeClaims, and the pods left
pending trigger its batcher again as kube-scheduler marks them unschedulable
(``pkg/controllers/provisioning/provisioner.go`` ``Reconcile``,
``RequeueImmediately``). The next solve sees the new NodeClaims as in-flight state nodes,
and charges each to its NodePool's limits at the capacity of the instance type it launched
as, where the pass that made it charged the largest of its options
(``scheduling/scheduler.go`` ``remainingResources``; Joiner ``scheduling/limits.py``
``subtract_max``). So a batch that ran into a limit gets more NodeClaims, and pods spread
over zones see the new NodeClaims' zones. The pods a pass placed on existing nodes are
bound there by then, so the next pass sees those nodes' room less their requests
(``charge_placed``). ``joiner plan`` repeats the pass until one makes
no NodeClaim or nothing is left pending, at most ``MAX_PASSES`` times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from joiner.api import labels, quantity
from joiner.api.objects import NodePool
from joiner.api.plan_output import PlannedNodeClaim
from joiner.api.pods import PodTemplate
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling import BoundPod, ExistingNode, NodePoolTemplate
from joiner.scheduling.daemonsets import overhead_on_node

#: Passes a plan makes at most (the first included): each must launch a NodeClaim for the
#: next to run, and a NodePool's limits end the chain within a few.
MAX_PASSES = 5


@dataclass(frozen=True, slots=True)
class Launched:
    """A NodeClaim a pass planned, with the instance type it launches as and its NodePool."""

    claim: PlannedNodeClaim
    instance_type: InstanceType
    pool: NodePool


def in_flight(
    launched: Sequence[Launched],
    templates: Mapping[str, PodTemplate],
    daemonsets: Sequence[PodTemplate],
) -> tuple[list[ExistingNode], list[BoundPod]]:
    """The launched NodeClaims as the next pass's in-flight nodes (labels of their launch,
    room: the type's allocatable less DaemonSet overhead and their pods' requests) and
    their pods as bound there (they count in topology domains). ``templates``: pod uid
    (``namespace/name``) -> its template."""
    nodes: list[ExistingNode] = []
    bound: list[BoundPod] = []
    for ln in launched:
        claim_labels = dict(ln.claim.labels)
        claim_labels.setdefault(labels.HOSTNAME, ln.claim.name)
        room = quantity.subtract(
            dict(ln.instance_type.allocatable),
            overhead_on_node(claim_labels, ln.pool.taints, daemonsets),
        )
        for uid in ln.claim.pods:
            t = templates[uid]
            room = quantity.subtract(room, dict(t.requests))
            bound.append(_bound(ln.claim.name, uid, t))
        nodes.append(
            ExistingNode(
                name=ln.claim.name,
                labels=tuple(sorted(claim_labels.items())),
                taints=ln.pool.taints,
                available=room,
                initialized=False,
                nodepool=ln.pool.name,
                allocatable=dict(ln.instance_type.allocatable),
            )
        )
    return nodes, bound


def charge_placed(
    nodes: Sequence[ExistingNode],
    placed: Sequence[tuple[str, str]],
    templates: Mapping[str, PodTemplate],
) -> tuple[list[ExistingNode], list[BoundPod]]:
    """``nodes`` with the pods earlier passes placed on them (``placed``: pod uid, node)
    charged to their room, and those pods as bound there (they count in topology domains
    and hold host ports).

    kube-scheduler binds those pods, and Karpenter's next solve sees a node's room as its
    allocatable less its pods' requests (Karpenter ``pkg/controllers/state/statenode.go``
    ``StateNode.Available``), against which ``ExistingNode.CanAdd``
    (``pkg/controllers/provisioning/scheduling/existingnode.go``) fits each pod's requests,
    the pod count included (as kube-scheduler's NodeResourcesFit does, Kubernetes
    ``pkg/scheduler/framework/plugins/noderesources/fit.go`` ``fitsRequest``). Rebuilt from
    the dump alone, a node would take again the room the first pass gave away."""
    used: dict[str, quantity.Resources] = {}
    bound: list[BoundPod] = []
    for uid, node in placed:
        t = templates[uid]
        used[node] = quantity.add(used.get(node, {}), dict(t.requests))
        bound.append(_bound(node, uid, t))
    charged = [
        replace(n, available=quantity.subtract(dict(n.available), used[n.name]))
        if n.name in used
        else n
        for n in nodes
    ]
    return charged, bound


def _bound(node: str, uid: str, t: PodTemplate) -> BoundPod:
    """The pod ``uid`` (``namespace/name``) of template ``t`` as bound to ``node``."""
    return BoundPod(
        node=node,
        namespace=uid.partition("/")[0],
        labels=t.labels,
        anti_affinity=t.pod_anti_affinity,
        host_ports=t.host_ports,
    )


def limits_left(
    nodepools: Sequence[NodePoolTemplate], launched: Sequence[Launched]
) -> tuple[NodePoolTemplate, ...]:
    """``nodepools`` with what their limits leave once the launched NodeClaims count at the
    capacity of their instance types (one node each)."""
    used: dict[str, quantity.Resources] = {}
    for ln in launched:
        pool_used = quantity.add(used.get(ln.pool.name, {}), dict(ln.instance_type.capacity))
        pool_used["nodes"] = used.get(ln.pool.name, {}).get("nodes", 0) + 1
        used[ln.pool.name] = pool_used
    out = []
    for t in nodepools:
        spent = used.get(t.nodepool.name)
        if not t.remaining or spent is None:
            out.append(t)
            continue
        left = tuple((k, v - spent.get(k, 0)) for k, v in t.remaining)
        out.append(NodePoolTemplate(t.nodepool, t.instance_types, left))
    return tuple(out)

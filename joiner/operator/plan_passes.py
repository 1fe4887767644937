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
over zones see the new NodeClaims' zones. ``joiner plan`` repeats the pass until one makes
no NodeClaim or nothing is left pending, at most ``MAX_PASSES`` times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
            bound.append(
                BoundPod(
                    node=ln.claim.name,
                    namespace=uid.partition("/")[0],
                    labels=t.labels,
                    anti_affinity=t.pod_anti_affinity,
                    host_ports=t.host_ports,
                )
            )
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

"""Scheduling views of the cluster state, shared by everything that asks "where would these
pods go now": the kube-scheduler model and the interruption controller's make-before-break
check."""

from __future__ import annotations

from collections.abc import Iterable

from joiner.api import quantity
from joiner.scheduling import BoundPod, ExistingNode, PodRequest
from joiner.state.cluster import ClusterState, Pod


def pod_requests(state: ClusterState, pods: Iterable[Pod]) -> tuple[PodRequest, ...]:
    """``pods`` as scheduling requests, each with its volumes' node requirements: every
    solve over cluster pods (provisioning, kube-scheduler, interruption, disruption, the
    baseline) builds them here, so none forgets volume topology."""
    return tuple(
        PodRequest(p.uid, p.template, p.order, state.volume_terms.get(p.template, ())) for p in pods
    )


def ready_nodes(state: ClusterState) -> tuple[list[ExistingNode], list[BoundPod]]:
    """The Ready, schedulable nodes with their free capacity, and the pods bound to them
    (they count in topology domains and hold host ports)."""
    existing: list[ExistingNode] = []
    bound: list[BoundPod] = []
    for n in state.ready_nodes():
        used: quantity.Resources = {}
        for p in state.pods_on(n.name):
            used = quantity.add(used, p.template.requests)
            bound.append(
                BoundPod(
                    node=n.name,
                    namespace=p.template.namespace,
                    labels=p.template.labels,
                    anti_affinity=p.template.pod_anti_affinity,
                    host_ports=p.template.host_ports,
                )
            )
        existing.append(
            ExistingNode(
                name=n.name,
                labels=tuple(sorted(n.labels.items())),
                taints=n.taints,
                available=quantity.subtract(n.allocatable, used),
                initialized=True,
                allocatable=n.allocatable,
            )
        )
    return existing, bound


#: The last few ``ready_snapshot`` answers: (state, its change key, nodes, bound pods).
_Ready = tuple[ClusterState, tuple[int, ...], tuple[ExistingNode, ...], tuple[BoundPod, ...]]
_READY: list[_Ready] = []


def ready_snapshot(state: ClusterState) -> tuple[tuple[ExistingNode, ...], tuple[BoundPod, ...]]:
    """``ready_nodes(state)`` as tuples, the very same objects while ``state.change_key()``
    is unchanged: solves over it with ``SchedulingInput.exclude_nodes`` (the baseline's
    drain simulation, a node at a time) share what the scheduler derives from it."""
    key = state.change_key()
    for i, (s, k, existing, bound) in enumerate(_READY):
        if s is state:
            if k == key:
                return existing, bound
            del _READY[i]
            break
    nodes, pods = ready_nodes(state)
    entry = (state, key, tuple(nodes), tuple(pods))
    _READY.insert(0, entry)
    del _READY[4:]
    return entry[2], entry[3]

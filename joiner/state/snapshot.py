"""Scheduling views of the cluster state, shared by everything that asks "where would these
pods go now": the kube-scheduler model and the interruption controller's make-before-break
check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from joiner.api import quantity
from joiner.api.objects import PodTemplate, Taint
from joiner.scheduling import BoundPod, ExistingNode, PodRequest
from joiner.state.cluster import ClusterState, Node, Pod


def pod_requests(state: ClusterState, pods: Iterable[Pod]) -> tuple[PodRequest, ...]:
    """``pods`` as scheduling requests, each with its volumes' node requirements: every
    solve over cluster pods (provisioning, kube-scheduler, interruption, disruption, the
    baseline) builds them here, so none forgets volume topology."""
    terms = state.volume_terms
    if len(_REQUESTS) > _REQUESTS_MAX:
        _REQUESTS.clear()
    out = []
    for p in pods:
        vt = terms.get(p.template, ()) if terms else ()
        # A pod's request is the same object while its template and volume terms are:
        # every pass asks again for every pending pod.
        hit = _REQUESTS.get(id(p))
        if (
            hit is None
            or hit[0] is not p
            or hit[1].template is not p.template
            or hit[1].volume_terms != vt
        ):
            claims = state.volume_claims.get(p.template, "") if vt else ""
            hit = _REQUESTS[id(p)] = (p, PodRequest(p.uid, p.template, p.order, vt, claims))
        out.append(hit[1])
    return tuple(out)


#: ``pod_requests`` answers by Pod id, with the Pod (kept alive so the id stays its own).
_REQUESTS: dict[int, tuple[Pod, PodRequest]] = {}
_REQUESTS_MAX = 1 << 14


def ready_nodes(state: ClusterState) -> tuple[list[ExistingNode], list[BoundPod]]:
    """The Ready, schedulable nodes with their free capacity, and the pods bound to them
    (they count in topology domains and hold host ports).

    A node's view is rebuilt only when something it is made of changed (the node object,
    its labels, taints or allocatable, also when changed in place, or its pods' templates);
    otherwise the very same objects as last time are returned.
    """
    existing: list[ExistingNode] = []
    bound: list[BoundPod] = []
    views = state.node_views
    fresh: dict[str, _View] = {}
    for n in state.ready_nodes():
        templates = tuple(p.template for p in state.pods_on(n.name))
        view = views.get(n.name)
        if view is None or not view_current(view, n, templates):
            view = (
                *view_basis(n, templates),
                _node_view(n.name, n.labels, n.taints, n.allocatable, templates),
            )
        fresh[n.name] = view
        node, node_pods = view[5]
        existing.append(node)
        bound.extend(node_pods)
    state.node_views = fresh
    return existing, bound


_Made = TypeVar("_Made")


def view_basis(
    node: Node, made: _Made
) -> tuple[Node, dict[str, str], tuple[Taint, ...], _Made, quantity.Resources]:
    """What a cached view of ``node`` is built from, to store as its first five entries:
    the node, a copy of its labels, its taints, ``made`` (what else the view reads, such as
    its pods' templates) and a copy of its allocatable."""
    return node, dict(node.labels), node.taints, made, dict(node.allocatable)


def view_current(view: tuple[object, ...], node: Node, made: object) -> bool:
    """Whether a view whose first five entries are ``view_basis(...)`` is still right for
    ``node`` and ``made``: the same node object with equal labels, taints and allocatable
    (also when changed in place) and an equal ``made``, compared without building a key
    (equal templates give an equal view: it reads nothing else of them)."""
    return (
        view[0] is node
        and view[3] == made
        and view[1] == node.labels
        and view[2] == node.taints
        and view[4] == node.allocatable
    )


def bound_pod(node: str, template: PodTemplate) -> BoundPod:
    """A pod of ``template`` running on ``node``, as a solve sees it: it counts in topology
    domains, its required anti-affinity keeps matching pods out, its host ports are taken."""
    return BoundPod(
        node=node,
        namespace=template.namespace,
        labels=template.labels,
        anti_affinity=template.pod_anti_affinity,
        host_ports=template.host_ports,
    )


#: (node, copies of its labels, its taints, its pods' templates, a copy of its allocatable,
#: (its ExistingNode, its bound pods)).
_View = tuple[
    Node,
    dict[str, str],
    tuple[Taint, ...],
    tuple[PodTemplate, ...],
    quantity.Resources,
    tuple[ExistingNode, tuple[BoundPod, ...]],
]


def _node_view(
    name: str,
    node_labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    allocatable: quantity.Resources,
    templates: tuple[PodTemplate, ...],
) -> tuple[ExistingNode, tuple[BoundPod, ...]]:
    used: quantity.Resources = {}
    pods: list[BoundPod] = []
    for t in templates:
        used = quantity.add(used, t.requests)
        pods.append(bound_pod(name, t))
    node = ExistingNode(
        name=name,
        labels=tuple(sorted(node_labels.items())),
        taints=taints,
        available=quantity.subtract(allocatable, used),
        initialized=True,
        allocatable=dict(allocatable),
    )
    return node, tuple(pods)


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

"""Drift: a node no longer matches what its NodePool would launch now.

Matches Karpenter's ``nodeclaim/disruption/drift.go`` (karpenter
``pkg/controllers/nodeclaim/disruption/drift.go`` ``Drift.isDrifted``), in order:

* ``NodePoolDrifted``: a template field Karpenter hashes (labels, annotations, taints,
  startupTaints, nodeClassRef, expireAfter, terminationGracePeriod) differs from the value the
  NodeClaim was launched from. Joiner records those values on the NodeClaim; for a node read
  from a running cluster (values unknown) it compares what the Node shows: the template
  labels and taints.
* ``RequirementsDrifted``: the node's labels no longer satisfy the NodePool's requirements.
* ``InstanceTypeNotFound``: the NodeClass no longer offers its instance type in its zone and
  capacity type.
* ``CloudProvider.IsDrifted``: the provider's own check (AMI, subnet, security groups).

Karpenter's hash annotation cannot be reproduced outside Go and is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from joiner.api.labels import WELL_KNOWN_LABELS
from joiner.api.objects import NodePool
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType, NodeClaimNotFoundError
from joiner.state.cluster import Node, NodeClaim

#: Instance types a NodeClass offers (the cloud provider's ``get_instance_types``).
TypesOf = Callable[[str], list[InstanceType]]


#: The cloud provider's own drift check (``CloudProvider.is_drifted``).
CloudDrift = Callable[[str], str]


class TypesByName:
    """A NodeClass's instance types by name, read from ``types_of`` once per NodeClass: one
    disruption pass happens at one instant, so every candidate of the pass sees the same
    types (and the pass no longer re-indexes the whole catalog per candidate)."""

    __slots__ = ("_by_class", "_lists", "_types_of")

    def __init__(self, types_of: TypesOf) -> None:
        self._types_of = types_of
        self._by_class: dict[str, dict[str, InstanceType]] = {}
        self._lists: dict[str, list[InstanceType]] = {}

    def source(self, node_class: str) -> list[InstanceType]:
        """The list ``types_of`` gave for ``node_class`` (asked once per pass)."""
        self(node_class)
        return self._lists[node_class]

    def __call__(self, node_class: str) -> Mapping[str, InstanceType]:
        found = self._by_class.get(node_class)
        if found is None:
            types = self._lists[node_class] = self._types_of(node_class)
            found = self._by_class[node_class] = _by_name(types)
        return found


def _by_name(types: list[InstanceType]) -> dict[str, InstanceType]:
    """``types`` by name, remembered per list object (the cloud hands out the same list
    while its types and prices are unchanged, so passes in a row share the index)."""
    hit = _BY_NAME.get(id(types))
    if hit is not None and hit[0] is types and len(hit[1]) == len(types):
        return hit[1]
    found = {t.name: t for t in types}
    if len(_BY_NAME) >= 64:
        _BY_NAME.clear()
    _BY_NAME[id(types)] = (types, found)
    return found


#: ``_by_name`` answers by list identity, with the list (kept alive so the id stays its own).
_BY_NAME: dict[int, tuple[list[InstanceType], dict[str, InstanceType]]] = {}


def _label_requirements(node: Node) -> Requirements:
    """``node``'s labels as requirements, remembered per Node object while its labels compare
    equal (a dict comparison, cheaper than sorting and hashing them every pass)."""
    hit = _LABELS.get(id(node))
    if hit is not None and hit[0] is node and hit[1] == node.labels:
        return hit[2]
    found = Requirements.from_label_items(tuple(sorted(node.labels.items())))
    if len(_LABELS) >= 4096:
        _LABELS.clear()
    _LABELS[id(node)] = (node, dict(node.labels), found)
    return found


#: ``_label_requirements`` answers by Node identity: (the node, kept alive so its id stays
#: valid; a copy of its labels then; the answer).
_LABELS: dict[int, tuple[Node, dict[str, str], Requirements]] = {}


def drift_reason(
    claim: NodeClaim,
    node: Node,
    pool: NodePool,
    types_of: TypesOf | TypesByName,
    cloud_drift: CloudDrift | None = None,
) -> str | None:
    """Why ``node`` has drifted from ``pool``, or None when it has not.

    ``types_of`` gives a NodeClass's instance types; a ``TypesByName`` (one per pass) indexes
    them once for every candidate of the pass, and the checks before the cloud provider's
    are then remembered per NodeClaim while everything they read is the same objects (the
    NodeClaim's launch record and instance, the node, its labels and taints, the NodePool,
    the type list): a disruption pass checks every candidate, and few change between passes.
    """
    if isinstance(types_of, TypesByName):
        types = types_of.source(claim.node_class)
        read = (claim, claim.launched_from, claim.instance, node, pool, types)
        hit = _STATIC.get(id(claim))
        if (
            hit is not None
            and all(a is b for a, b in zip(hit[0], read, strict=True))
            and hit[1] == node.labels
            and hit[2] == node.taints
        ):
            reason = hit[3]
        else:
            reason = _static_reason(claim, node, pool, types_of)
            if len(_STATIC) >= 8192:
                _STATIC.clear()
            _STATIC[id(claim)] = (read, dict(node.labels), node.taints, reason)
    else:
        reason = _static_reason(claim, node, pool, types_of)
    if reason is not None or cloud_drift is None or claim.instance is None:
        return reason
    try:
        found_drift = cloud_drift(claim.instance.provider_id)
    except NodeClaimNotFoundError:
        return None  # the instance is gone: termination, not drift, handles it
    if found_drift:
        return f"the cloud provider reports {found_drift} for NodeClass {claim.node_class}"
    return None


#: ``_static_reason`` answers by NodeClaim id: (the objects read, the NodeClaim first, kept
#: alive so the id stays its own, compared by identity; a copy of the node's labels; its
#: taints; the answer).
_STATIC: dict[int, tuple[tuple[object, ...], dict[str, str], object, str | None]] = {}


def _static_reason(
    claim: NodeClaim, node: Node, pool: NodePool, types_of: TypesOf | TypesByName
) -> str | None:
    """``drift_reason`` before the cloud provider's check: a reason, or None."""
    reason = _template_drift(claim, node, pool)
    if reason is not None:
        return reason
    have = _label_requirements(node)
    conflict = have.compatible(pool.requirements, allow_undefined=WELL_KNOWN_LABELS)
    if conflict is not None:
        return f"NodePool {pool.name} requirements no longer match the node: {conflict}"
    return _offering_drift(claim, types_of)


def _template_drift(claim: NodeClaim, node: Node, pool: NodePool) -> str | None:
    """The NodePool template's drift (``drift.go`` ``NodePoolDrifted``): a field of the
    spec it was launched from that changed, or, without that record, a template label or
    taint the node lacks; None when there is none."""
    if claim.launched_from is not None:
        current = pool.drift_fields()
        for key in sorted(current):
            if claim.launched_from.get(key) != current[key]:
                return f"NodePool {pool.name} spec.template {key} changed since launch"
        return None
    for key, value in pool.labels:
        if node.labels.get(key) != value:
            return f"NodePool {pool.name} template label {key}={value} is not on the node"
    for taint in pool.taints:
        if taint not in node.taints:
            return f"NodePool {pool.name} template taint {taint} is not on the node"
    return None


def _offering_drift(claim: NodeClaim, types_of: TypesOf | TypesByName) -> str | None:
    """The launched instance type no longer offered by its NodeClass, or no longer as its
    capacity type in its zone (``drift.go`` ``InstanceTypeNotFound``); None when it is."""
    if claim.instance is None:
        return None
    it_name = claim.instance.instance_type.name
    offering = claim.instance.offering
    if isinstance(types_of, TypesByName):
        found = types_of(claim.node_class).get(it_name)
    else:
        found = next((t for t in types_of(claim.node_class) if t.name == it_name), None)
    if found is None:
        return f"instance type {it_name} is no longer offered by NodeClass {claim.node_class}"
    if not any(
        o.zone == offering.zone and o.capacity_type == offering.capacity_type
        for o in found.offerings
    ):
        return (
            f"instance type {it_name} is no longer offered as {offering.capacity_type} in "
            f"{offering.zone}"
        )
    return None

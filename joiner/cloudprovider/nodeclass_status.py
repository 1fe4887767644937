"""What a cloud provider resolved an EC2NodeClass to, for its ``status`` in controller mode.

Karpenter-AWS's EC2NodeClass controller (karpenter-provider-aws
``pkg/controllers/nodeclass/controller.go`` ``Reconcile``) runs one reconciler per part and
each sets a condition: ``SubnetsReady`` (``subnet.go``), ``SecurityGroupsReady``
(``securitygroup.go``), ``AMIsReady`` (``ami.go``), ``InstanceProfileReady``
(``instanceprofile.go``), ``PlacementGroupReady`` (``placementgroup.go``) and
``ValidationSucceeded`` (``validation.go``); ``Ready`` is their root (``pkg/apis/v1/
ec2nodeclass_status.go`` ``StatusConditions``). A part whose lookup failed sets nothing
(the reconciler returns an error and the previous condition stays): here such a part is
absent from ``NodeClassStatus.conditions`` and its field is None.

A cloud provider that resolves NodeClasses offers ``node_class_status(name)`` (a
``NodeClassStatus``, or None for a NodeClass it does not know); the Kubernetes adapter
turns its answer into the object's status (``cluster/kube/configstatus.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Condition types (karpenter-provider-aws ``pkg/apis/v1/ec2nodeclass_status.go``).
SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
AMIS_READY = "AMIsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
PLACEMENT_GROUP_READY = "PlacementGroupReady"
VALIDATION_SUCCEEDED = "ValidationSucceeded"
#: ``Ready``'s dependents, in Karpenter's order (capacity reservations are not among them
#: unless its ``ReservedCapacity`` gate is on; Joiner writes no ``capacityReservations``).
DEPENDENTS = (
    AMIS_READY,
    SUBNETS_READY,
    SECURITY_GROUPS_READY,
    INSTANCE_PROFILE_READY,
    VALIDATION_SUCCEEDED,
    PLACEMENT_GROUP_READY,
)
#: The conditions ``ValidationSucceeded`` waits on (karpenter-provider-aws
#: ``pkg/controllers/nodeclass/validation.go`` ``requiredConditions``).
REQUIRED_FOR_VALIDATION = (AMIS_READY, INSTANCE_PROFILE_READY, SECURITY_GROUPS_READY, SUBNETS_READY)
_AWAITING = "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition to set: ``status`` is ``True``, ``False`` or ``Unknown``; ``reason``
    and ``message`` as Karpenter words them (``SetTrue`` uses the type as its reason and an
    empty message)."""

    status: str
    reason: str
    message: str = ""


def ready(kind: str, message: str = "") -> Condition:
    """``kind`` set True as operatorpkg's ``SetTrue`` sets it (reason = the type)."""
    return Condition(TRUE, kind, message)


@dataclass(frozen=True, slots=True)
class AMIStatus:
    """One ``status.amis`` entry: image id, name, and its requirements as
    ``(key, operator, values)`` sorted as Karpenter sorts them (by key length, then key)."""

    id: str
    name: str
    requirements: tuple[tuple[str, str, tuple[str, ...]], ...]
    deprecated: bool = False


@dataclass(frozen=True, slots=True)
class NodeClassStatus:
    """A NodeClass's resolved parts. ``subnets`` as ``(id, zone, zoneID)``,
    ``security_groups`` as ``(id, name)``, ``amis`` and ``instance_profile``; None where the
    cloud has nothing to report (its lookup failed, or a simulated cloud has no AWS IDs),
    so the object keeps what it has. ``conditions`` by type: only the ones to set."""

    subnets: tuple[tuple[str, str, str], ...] | None = None
    security_groups: tuple[tuple[str, str], ...] | None = None
    amis: tuple[AMIStatus, ...] | None = None
    instance_profile: str | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)


def with_validation(conditions: dict[str, Condition]) -> dict[str, Condition]:
    """``conditions`` plus ``ValidationSucceeded`` as karpenter-provider-aws
    ``pkg/controllers/nodeclass/validation.go`` ``Validation.Reconcile`` decides it from the
    required parts: False (``DependenciesNotReady``) when one is False, Unknown when one is
    not known, else True. Its authorization dry runs (CreateFleet, CreateLaunchTemplate,
    RunInstances) are not made."""
    states = [conditions[c].status if c in conditions else UNKNOWN for c in REQUIRED_FOR_VALIDATION]
    out = dict(conditions)
    if FALSE in states:
        out[VALIDATION_SUCCEEDED] = Condition(FALSE, "DependenciesNotReady", _AWAITING)
    elif UNKNOWN in states:
        out[VALIDATION_SUCCEEDED] = Condition(UNKNOWN, "DependenciesNotReady", _AWAITING)
    else:
        out[VALIDATION_SUCCEEDED] = ready(VALIDATION_SUCCEEDED)
    return out

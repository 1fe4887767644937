"""CloudProvider contract, InstanceType/Offering model and typed errors (Karpenter ``types.go``)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from joiner.api import labels
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirement, Requirements


@dataclass(frozen=True, slots=True)
class Offering:
    """One place an instance type can launch: a zone and a capacity type, with its price.

    Attributes:
        zone: availability zone name (``us-east-1a``).
        zone_id: the stable zone id (``use1-az1``).
        capacity_type: ``spot``, ``on-demand`` or ``reserved``.
        price_per_hour: USD per hour.
        available: False when not offered here, without a price, or ICE-marked.
        interruption_rate_per_hour: Spot reclaim hazard (0 for on-demand).
        price_estimated: True when the price is not from a real table row (the spot price of
            a type without a Spot Advisor row, or a region without an on-demand table).
        reservation_id: the capacity reservation of a ``reserved`` offering (``cr-...``),
            else ``""``; a non-reserved offering is compatible only with requirements that
            let the reservation label be absent (Karpenter-AWS gives it ``DoesNotExist``).
        reservation_capacity: instances the reservation can still take (Karpenter's
            ``Offering.ReservationCapacity``; 0 for other capacity types).
        catalog_price_per_hour: the price before a NodeOverlay changed ``price_per_hour``
            (USD per hour; None when no overlay did): what the instance costs, while
            ``price_per_hour`` is the price Karpenter's decisions see.
    """

    zone: str
    zone_id: str
    capacity_type: str
    price_per_hour: float
    available: bool = True
    interruption_rate_per_hour: float = 0.0
    price_estimated: bool = False
    reservation_id: str = ""
    reservation_capacity: int = 0
    catalog_price_per_hour: float | None = None

    @property
    def cost_per_hour(self) -> float:
        """What the instance costs, USD per hour: the catalog's price, not an overlay's."""
        if self.catalog_price_per_hour is not None:
            return self.catalog_price_per_hour
        return self.price_per_hour

    def compatible(self, reqs: Requirements) -> bool:
        """True when zone, zone id, capacity type and reservation id are allowed by
        ``reqs`` (an offering without a reservation needs the reservation label allowed
        to be absent: no requirement, ``NotIn`` or ``DoesNotExist``). Memoised per
        requirement set and (zone, capacity type, zone id, reservation id), the only fields
        the answer depends on (``Requirements.memo``)."""
        memo = reqs.memo()
        key = ("offering", self.zone, self.capacity_type, self.zone_id, self.reservation_id)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._compatible(reqs)
        return found is True

    def _compatible(self, reqs: Requirements) -> bool:
        if not (
            reqs.allows(labels.ZONE, self.zone)
            and reqs.allows(labels.CAPACITY_TYPE, self.capacity_type)
            and reqs.allows(labels.ZONE_ID, self.zone_id)
        ):
            return False
        r = reqs.get(labels.CAPACITY_RESERVATION_ID)
        if r is None:
            return True
        if self.reservation_id:
            return r.has(self.reservation_id)
        return r.operator in ("NotIn", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An instance type as the scheduler sees it (Karpenter ``cloudprovider.InstanceType``).

    Attributes:
        name: e.g. ``c5.xlarge``.
        requirements: every well-known label as a requirement (zone and capacity type are the
            union over offerings).
        capacity: cpu (millicores), memory (bytes, after VM overhead), pods, ephemeral-storage
            (bytes) and extended resources such as ``nvidia.com/gpu``.
        overhead: kube-reserved + system-reserved + eviction threshold.
        allocatable: capacity minus overhead; what pods can request.
        offerings: every (zone, capacity type), unavailable ones included.
        capacity_overlaid: a NodeOverlay set some of ``capacity`` (Karpenter
            ``InstanceType.IsCapacityOverlayApplied``).
    """

    name: str
    requirements: Requirements
    capacity: Resources
    overhead: Resources
    allocatable: Resources
    offerings: tuple[Offering, ...]
    capacity_overlaid: bool = False

    def available_offerings(self, reqs: Requirements | None = None) -> list[Offering]:
        """Available offerings, filtered by ``reqs`` when given."""
        return [o for o in self.offerings if o.available and (reqs is None or o.compatible(reqs))]

    def cheapest_price(self, reqs: Requirements | None = None) -> float | None:
        """Cheapest available compatible offering, USD/hour (Karpenter ``OrderByPrice`` key)."""
        prices = [o.price_per_hour for o in self.available_offerings(reqs)]
        return min(prices) if prices else None

    def label(self, key: str) -> str | None:
        """The single value of a well-known label such as ``kubernetes.io/arch``."""
        r = self.requirements.get(key)
        return r.any() if r is not None else None


def order_by_price(types: Sequence[InstanceType], reqs: Requirements) -> list[InstanceType]:
    """Types ordered by their cheapest available compatible offering, then name; types without
    one go last (Karpenter ``InstanceTypes.OrderByPrice``)."""

    def key(it: InstanceType) -> tuple[float, str]:
        price = it.cheapest_price(reqs)
        return (price if price is not None else float("inf"), it.name)

    return sorted(types, key=key)


@dataclass(frozen=True, slots=True)
class Subnet:
    """A VPC subnet the simulated cloud launches into."""

    id: str
    zone: str
    zone_id: str
    tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SecurityGroup:
    """A security group a NodeClass may select."""

    id: str
    name: str = ""
    tags: tuple[tuple[str, str], ...] = ()


#: EC2 Fleet's Spot allocation strategies Joiner models (Amazon EC2 API Reference,
#: "SpotOptionsRequest" ``AllocationStrategy``); Karpenter asks for the first.
SPOT_ALLOCATION_STRATEGIES = ("price-capacity-optimized", "capacity-optimized", "lowest-price")
#: EC2 Fleet's on-demand allocation strategies; Karpenter asks for the first.
ON_DEMAND_ALLOCATION_STRATEGIES = ("lowest-price", "prioritized")


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What the provisioner asks the cloud for: one node satisfying ``requirements``.

    ``instance_types`` is the price-ordered list of options the scheduler kept (every one fits
    the pods); ``requirements`` narrows zone and capacity type. The allocation strategies are
    the fleet request's (Karpenter: ``price-capacity-optimized`` and ``lowest-price``; an
    ASG's MixedInstancesPolicy may set others; ``prioritized`` follows the order of
    ``instance_types``, or the offerings' prices with ``priority_by_price``).
    """

    nodeclaim_name: str
    nodepool: str
    node_class: str
    requirements: Requirements
    instance_types: tuple[InstanceType, ...]
    tags: tuple[tuple[str, str], ...] = ()
    spot_allocation_strategy: str = SPOT_ALLOCATION_STRATEGIES[0]
    on_demand_allocation_strategy: str = ON_DEMAND_ALLOCATION_STRATEGIES[0]
    #: Each override's priority is its offering's price (Karpenter-AWS when a NodeOverlay
    #: priced an option), not the order of ``instance_types``.
    priority_by_price: bool = False


@dataclass(frozen=True, slots=True)
class Allocation:
    """Why the fleet chose the instance's pool.

    Attributes:
        strategy: the allocation strategy applied.
        price_per_hour: the pool's price at launch, USD.
        capacity_score: the pool's capacity score at launch (1-10; None for on-demand).
        pools: how many pools (instance type x zone overrides) the request offered.
        reason: one sentence naming the rule that picked the pool.
    """

    strategy: str
    price_per_hour: float
    capacity_score: float | None
    pools: int
    reason: str


@dataclass(frozen=True, slots=True)
class Instance:
    """A launched instance: the resolved offering and its identity."""

    provider_id: str
    instance_id: str
    instance_type: InstanceType
    offering: Offering
    subnet_id: str
    launched_at_s: float
    tags: tuple[tuple[str, str], ...] = ()
    allocation: Allocation | None = None


class CloudProviderError(Exception):
    """Base of the typed errors a CloudProvider raises."""


class InsufficientCapacityError(CloudProviderError):
    """No offering could be launched (ICE); ``offerings`` are marked unavailable for 3 minutes.

    The provisioner deletes the NodeClaim and its pods are rescheduled on the next pass.
    """

    def __init__(self, message: str, offerings: Sequence[tuple[str, Offering]] = ()) -> None:
        super().__init__(message)
        self.offerings = tuple(offerings)


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClass does not resolve (no subnets or security groups); nothing is launched."""


class CreateError(CloudProviderError):
    """A launch failed for another reason; ``reason`` is a machine-readable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class NodeClaimNotFoundError(CloudProviderError):
    """The instance is gone; a delete that raises this is complete."""


class CloudProvider(Protocol):
    """The port every capacity backend implements (Karpenter ``cloudprovider.CloudProvider``)."""

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance for ``request``.

        Chooses the capacity type first (spot before on-demand when both are allowed and a
        compatible spot offering is available), then the offering.

        Raises:
            InsufficientCapacityError: no allowed offering could be launched.
            NodeClassNotReadyError: the NodeClass does not resolve.
            CreateError: any other launch failure.
        """
        ...

    def delete(self, provider_id: str) -> None:
        """Terminate the instance. Raises ``NodeClaimNotFoundError`` once it is gone."""
        ...

    def get(self, provider_id: str) -> Instance:
        """The running instance. Raises ``NodeClaimNotFoundError`` when gone."""
        ...

    def list(self) -> builtins.list[Instance]:
        """All running instances Joiner launched, ordered by provider id."""
        ...

    def get_instance_types(self, node_class: str) -> builtins.list[InstanceType]:
        """All instance types for a NodeClass, unavailable offerings included, ordered by name.

        The list may be shared with later calls (the same object while nothing changed, so
        callers' per-list caches hit): callers must not mutate it.

        Raises:
            NodeClassNotReadyError: the NodeClass does not resolve.
        """
        ...

    def is_drifted(self, provider_id: str) -> str:
        """Why the instance no longer matches its NodeClass (``AMIDrift``, ``SubnetDrift``,
        ``SecurityGroupDrift``), or ``""`` (Karpenter ``CloudProvider.IsDrifted``).

        Raises:
            NodeClaimNotFoundError: the instance is gone.
        """
        ...


def requirement_for_types(types: Sequence[InstanceType]) -> Requirement:
    """``node.kubernetes.io/instance-type In [names]`` for a list of options."""
    return Requirement.in_(labels.INSTANCE_TYPE, *[t.name for t in types])

"""NodeOverlays applied to a NodePool's instance types (Karpenter's ``NodeOverlay`` gate).

Karpenter v1.14 (``pkg/controllers/nodeoverlay/controller.go`` ``Reconcile``) evaluates every
overlay against every NodePool's instance types and keeps the result in an instance-type
store (``store.go``); its cloud-provider decorator (``pkg/cloudprovider/overlay``
``GetInstanceTypes``) hands every consumer (provisioning, disruption) the types with the
store applied. ``Overlays`` is that store, and ``Overlays.apply`` that decorator:

* Order (``pkg/apis/v1alpha1/nodeoverlay.go`` ``OrderByWeight``): higher ``weight`` first
  (unset is 0); equal weights by name, the later name in the alphabet first.
* Selection (``controller.go`` ``getOverlaidOfferings``): an overlay selects an instance type
  of a NodePool when its requirements are compatible with the type's requirements, the
  pool's template labels and ``karpenter.sh/nodepool`` (no undefined label allowed), and
  then those of the type's offerings its requirements allow (zone, capacity type,
  reservation).
* Conflict (``validateInstanceTypesOverride``, ``store.go`` ``isOfferingUpdateConflicting``,
  ``isCapacityUpdateConflicting``): an overlay conflicts when, for any pool and type it
  selects, an offering's price was already set by an overlay of the *same* weight, or a
  capacity resource it sets was already set by one of the same weight. A conflicting overlay
  is applied nowhere (its ``ValidationSucceeded`` condition is False, reason ``Conflict``);
  Joiner warns instead.
* Precedence (``updateInstanceTypeOffering``, ``updateInstanceTypeCapacity``): the first
  overlay in that order to set an offering's price wins (prices do not stack); capacity is
  merged per resource, the first to set a resource winning.
* Price (``pkg/cloudprovider/types.go`` ``AdjustedPrice``): ``price`` replaces the price;
  ``+x``/``-x`` adds; ``+p%``/``-p%`` scales by ``1 + p/100``; an adjusted price below 0 is 0.
* Capacity (``InstanceType.ApplyCapacityOverlay``): the resources are set on the type's
  capacity (replacing a value it had), and so on its allocatable (no overhead is reserved
  for an extended resource).

The overlaid price is the one decisions use (scheduling, launch order, consolidation's price
comparisons); the offering keeps the catalog's price in ``catalog_price_per_hour``, which the
simulation bills.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from joiner.api import labels
from joiner.api.nodepools import NodePool
from joiner.api.overlays import NodeOverlay
from joiner.api.requirements import Requirements
from joiner.cloudprovider.launch import MAX_LAUNCH_INSTANCE_TYPES
from joiner.cloudprovider.types import InstanceType, Offering, order_by_price

#: NodeClaim annotations saying an overlay changed the options' prices or capacities
#: (Karpenter ``pkg/apis/v1alpha1/labels.go``).
PRICE_OVERLAY_APPLIED = "karpenter.sh/price-overlay-applied"
CAPACITY_OVERLAY_APPLIED = "karpenter.sh/capacity-overlay-applied"

#: An offering within its type: (zone, capacity type, reservation id).
OfferingKey = tuple[str, str, str]


def adjusted_price(price_per_hour: float, change: str) -> float:
    """``price_per_hour`` after one overlay's ``price`` or ``priceAdjustment`` (Karpenter
    ``pkg/cloudprovider/types.go`` ``AdjustedPrice``; the CRD's patterns have been checked).
    USD per hour in and out."""
    if not change:
        return price_per_hour
    if change[0] not in "+-":
        return float(change)
    if change.endswith("%"):
        adjusted = price_per_hour * (1 + float(change[:-1]) / 100)
    else:
        adjusted = price_per_hour + float(change)
    return max(adjusted, 0.0)


def order_by_weight(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Highest weight first; equal weights by name, later in the alphabet first (Karpenter
    ``pkg/apis/v1alpha1/nodeoverlay.go`` ``NodeOverlayList.OrderByWeight``)."""
    by_name = sorted(overlays, key=lambda o: o.name, reverse=True)
    return sorted(by_name, key=lambda o: o.weight, reverse=True)


def _key(o: Offering) -> OfferingKey:
    return (o.zone, o.capacity_type, o.reservation_id)


def selected_offerings(pool: NodePool, it: InstanceType, overlay: NodeOverlay) -> list[Offering]:
    """The offerings of ``it`` in ``pool`` that ``overlay`` selects; empty when it does not
    select the type (Karpenter ``pkg/controllers/nodeoverlay/controller.go``
    ``getOverlaidOfferings``: unavailable offerings count)."""
    base = Requirements.from_labels({**dict(pool.labels), labels.NODEPOOL: pool.name})
    base = base.merge(it.requirements)
    if base.compatible(overlay.requirements, frozenset()) is not None:
        return []
    return [o for o in it.offerings if o.compatible(overlay.requirements)]


@dataclass
class _TypeUpdate:
    """What the overlays set on one type of one pool, with the weight of the last overlay
    that touched each (Karpenter ``store.go`` ``priceUpdate``/``capacityUpdate``)."""

    price: dict[OfferingKey, tuple[str, int]] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    capacity_lowest: tuple[tuple[str, int], ...] = ()
    capacity_weight: int | None = None

    def conflicts(self, overlay: NodeOverlay, offerings: Sequence[Offering]) -> bool:
        """Karpenter ``store.go`` ``isOfferingUpdateConflicting`` and
        ``isCapacityUpdateConflicting`` (overlays come in descending weight)."""
        if overlay.price_change is not None:
            for o in offerings:
                found = self.price.get(_key(o))
                if found is not None and found[1] == overlay.weight:
                    return True
        if overlay.capacity and self.capacity_weight == overlay.weight:
            lowest = {name for name, _ in self.capacity_lowest}
            return any(name in lowest for name, _ in overlay.capacity)
        return False

    def store(self, overlay: NodeOverlay, offerings: Sequence[Offering]) -> None:
        """Karpenter ``store.go`` ``updateInstanceTypeOffering`` and
        ``updateInstanceTypeCapacity``: the first setter wins; the weight moves down."""
        change = overlay.price_change
        if change is not None:
            for o in offerings:
                was = self.price.get(_key(o))
                self.price[_key(o)] = (was[0] if was else change, overlay.weight)
        if overlay.capacity:
            for name, amount in overlay.capacity:
                self.capacity.setdefault(name, amount)
            self.capacity_lowest = overlay.capacity
            self.capacity_weight = overlay.weight


_Updates = dict[str, dict[str, _TypeUpdate]]
_Selection = list[tuple[str, str, list[Offering]]]


def _select(
    overlay: NodeOverlay, pools: Sequence[tuple[NodePool, Sequence[InstanceType]]]
) -> _Selection:
    out: _Selection = []
    for pool, types in pools:
        for it in types:
            offerings = selected_offerings(pool, it, overlay)
            if offerings:
                out.append((pool.name, it.name, offerings))
    return out


def resolve(
    overlays: Sequence[NodeOverlay], pools: Sequence[tuple[NodePool, Sequence[InstanceType]]]
) -> tuple[_Updates, tuple[NodeOverlay, ...]]:
    """Every overlay evaluated against every pool's types (Karpenter
    ``pkg/controllers/nodeoverlay/controller.go`` ``Reconcile``): the updates per pool and
    type name, and the overlays left out for a conflict, in evaluation order."""
    updates: _Updates = {}
    conflicting: list[NodeOverlay] = []
    for overlay in order_by_weight(overlays):
        chosen = _select(overlay, pools)
        if any(
            updates.get(p, {}).get(t, _TypeUpdate()).conflicts(overlay, offs)
            for p, t, offs in chosen
        ):
            conflicting.append(overlay)
            continue
        for p, t, offs in chosen:
            updates.setdefault(p, {}).setdefault(t, _TypeUpdate()).store(overlay, offs)
    return updates, tuple(conflicting)


def _apply_type(it: InstanceType, update: _TypeUpdate) -> InstanceType:
    offerings = tuple(
        replace(
            o,
            price_per_hour=adjusted_price(o.price_per_hour, update.price[_key(o)][0]),
            catalog_price_per_hour=o.cost_per_hour,
        )
        if _key(o) in update.price
        else o
        for o in it.offerings
    )
    if not update.capacity:
        return replace(it, offerings=offerings)
    capacity = dict(it.capacity) | update.capacity
    allocatable = dict(it.allocatable) | {
        name: amount - it.overhead.get(name, 0) for name, amount in update.capacity.items()
    }
    return replace(
        it,
        offerings=offerings,
        capacity=capacity,
        allocatable=allocatable,
        capacity_overlaid=True,
    )


def _shape(pools: Sequence[tuple[NodePool, Sequence[InstanceType]]]) -> tuple[object, ...]:
    """What overlay selection reads of ``pools``: each pool and its types' names,
    requirements and offering keys."""
    return tuple(
        (
            pool,
            tuple((it.name, it.requirements, tuple(_key(o) for o in it.offerings)) for it in types),
        )
        for pool, types in pools
    )


class Overlays:
    """The NodeOverlays in force and their resolved updates (Karpenter's
    ``InstanceTypeStore``), evaluated again whenever the pools or their type lists change."""

    def __init__(self, overlays: Sequence[NodeOverlay]) -> None:
        self.overlays = tuple(overlays)
        self._seen: list[tuple[NodePool, Sequence[InstanceType]]] = []
        self._shape: tuple[object, ...] | None = None
        self._updates: _Updates = {}
        self.conflicting: tuple[NodeOverlay, ...] = ()
        self._applied: dict[str, tuple[Sequence[InstanceType], list[InstanceType]]] = {}
        self._reported: set[str] = set()

    def apply_all(
        self, pools: Sequence[tuple[NodePool, Sequence[InstanceType]]]
    ) -> list[list[InstanceType]]:
        """Each pool's types with the overlays applied, in the order given (Karpenter
        ``pkg/cloudprovider/overlay`` ``GetInstanceTypes``). A list handed in again (the same
        object) gives the same list back, so per-list caches downstream still hit."""
        if not self._same(pools):
            # New lists (a Spot price epoch, an ICE mark) with the same pools, types and
            # offerings select the same: what an overlay selects ignores prices and
            # availability, so only a change of shape evaluates the overlays again.
            shape = _shape(pools)
            if shape != self._shape:
                self._updates, self.conflicting = resolve(self.overlays, pools)
                self._shape = shape
            self._seen = list(pools)
            self._applied.clear()
        return [self._apply(pool.name, types) for pool, types in pools]

    def _same(self, pools: Sequence[tuple[NodePool, Sequence[InstanceType]]]) -> bool:
        """True when ``pools`` holds the very objects the updates were resolved from."""
        return len(pools) == len(self._seen) and all(
            p is q and t is u for (p, t), (q, u) in zip(pools, self._seen, strict=True)
        )

    def _apply(self, pool: str, types: Sequence[InstanceType]) -> list[InstanceType]:
        held = self._applied.get(pool)
        if held is not None and held[0] is types:
            return held[1]
        updates = self._updates.get(pool, {})
        out = [_apply_type(it, updates[it.name]) if it.name in updates else it for it in types]
        self._applied[pool] = (types, out)
        return out

    def unreported_warnings(self) -> list[str]:
        """``warnings`` not returned by an earlier call of this method (controller mode
        logs each conflict once, not on every evaluation)."""
        fresh = [w for w in self.warnings() if w not in self._reported]
        self._reported.update(fresh)
        return fresh

    def warnings(self) -> list[str]:
        """One line per overlay left out for a conflict (Karpenter sets its
        ``ValidationSucceeded`` condition False with reason ``Conflict``)."""
        return [
            f"{o.where}: NodeOverlay conflicts with another overlay of weight {o.weight} on "
            "the same instance types (condition ValidationSucceeded False, reason Conflict): "
            "not applied"
            for o in self.conflicting
        ]


def _overlaid(it: InstanceType) -> bool:
    return it.capacity_overlaid or any(o.catalog_price_per_hour is not None for o in it.offerings)


def overlay_annotations(types: Sequence[InstanceType], reqs: Requirements) -> dict[str, str]:
    """The NodeClaim's overlay annotations (``"true"`` each) when an overlay changed the
    price or the capacity of one of its cheapest ``MAX_LAUNCH_INSTANCE_TYPES`` options
    under ``reqs`` (Karpenter ``pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go``
    ``ToNodeClaim``)."""
    if not any(_overlaid(it) for it in types):
        return {}  # the common case, without ordering the options
    kept = order_by_price(types, reqs)[:MAX_LAUNCH_INSTANCE_TYPES]
    out: dict[str, str] = {}
    if any(o.catalog_price_per_hour is not None for it in kept for o in it.offerings):
        out[PRICE_OVERLAY_APPLIED] = "true"
    if any(it.capacity_overlaid for it in kept):
        out[CAPACITY_OVERLAY_APPLIED] = "true"
    return out

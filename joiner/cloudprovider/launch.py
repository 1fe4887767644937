"""Launch rules shared by every CloudProvider adapter (Karpenter-AWS ``instance.go``).

* ``filter_unwanted_spot``: drop types whose cheapest offering costs more than the cheapest
  compatible on-demand offering.
* ``choose_capacity_type``: the first of reserved, spot, on-demand (``CAPACITY_TYPE_PRECEDENCE``)
  that the request allows and that has a candidate offering.
* ``UnavailableOfferings``: the 3-minute cache of offerings that hit ICE or an interruption.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from joiner.api import labels
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType, Offering

#: Karpenter's UnavailableOfferingsTTL: an interrupted or ICE'd offering is skipped this long.
UNAVAILABLE_OFFERING_TTL_S = 180.0


def filter_unwanted_spot(
    candidates: Sequence[tuple[InstanceType, Offering]],
) -> list[tuple[InstanceType, Offering]]:
    """Drop types whose cheapest offering costs more than the cheapest on-demand offering.

    Karpenter AWS ``filterUnwantedSpot``: this keeps a large spot type from winning over a
    cheaper, sufficient on-demand one. The type holding the cheapest on-demand offering always
    survives, so the result is empty only when the input is. As in Karpenter
    (``isMixedCapacityLaunch``), it applies only when there are both spot and on-demand
    candidates; otherwise the input is returned unchanged.
    """
    on_demand = [o.price_per_hour for _, o in candidates if o.capacity_type == "on-demand"]
    if not on_demand or all(o.capacity_type == "on-demand" for _, o in candidates):
        return list(candidates)
    cheapest_od = min(on_demand)
    cheapest: dict[str, float] = {}
    for it, o in candidates:
        cheapest[it.name] = min(cheapest.get(it.name, o.price_per_hour), o.price_per_hour)
    return [(it, o) for it, o in candidates if cheapest[it.name] <= cheapest_od]


def choose_capacity_type(
    candidates: Sequence[tuple[InstanceType, Offering]], reqs: Requirements
) -> str | None:
    """The capacity type to launch: the first of ``labels.CAPACITY_TYPE_PRECEDENCE`` allowed
    by ``reqs`` with any candidate offering (spot before on-demand), or None when none."""
    allowed = reqs.get_or_exists(labels.CAPACITY_TYPE)
    return next(
        (
            ct
            for ct in labels.CAPACITY_TYPE_PRECEDENCE
            if allowed.has(ct) and any(o.capacity_type == ct for _, o in candidates)
        ),
        None,
    )


class UnavailableOfferings:
    """Offerings (instance type, zone, capacity type) to skip until a deadline.

    ``now`` returns seconds (any epoch, but one clock per cache). ``"*"`` as the instance type
    and zone marks a whole capacity type (Karpenter does this for spot when the spot
    service-linked role is missing).
    """

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._until: dict[tuple[str, str, str], float] = {}

    def mark(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        ttl_s: float = UNAVAILABLE_OFFERING_TTL_S,
    ) -> None:
        """Skip this offering for ``ttl_s`` seconds from now (an existing later deadline stays)."""
        key = (instance_type, zone, capacity_type)
        self._until[key] = max(self._until.get(key, 0.0), self._now() + ttl_s)

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """True while the offering, or its whole capacity type, is marked."""
        now = self._now()
        for key in ((instance_type, zone, capacity_type), ("*", "*", capacity_type)):
            until = self._until.get(key)
            if until is not None and until > now:
                return True
        return False

    def active(self) -> list[tuple[str, str, str]]:
        """Keys marked now, sorted."""
        now = self._now()
        return sorted(k for k, until in self._until.items() if until > now)

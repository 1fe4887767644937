"""EC2 Fleet's allocation strategies over capacity pools (one ``instant`` request, capacity 1).

AWS documents the strategies in words only (EC2 User Guide, "Allocation strategies for Spot
Instances" and "for On-Demand Instances"); the exact scoring is not
public, so each is reproduced as its documented rule over the pools' price and capacity
score (``market.SpotMarket``), ties broken by a seeded per-pool draw, never by name:

* ``price-capacity-optimized`` (Karpenter's Spot choice): the pools whose capacity score is
  within ``PCO_CAPACITY_BAND`` of the best, then the lowest price among them.
* ``capacity-optimized``: the best capacity score, then the lowest price.
* ``lowest-price``: the lowest price, then the best capacity score (on-demand's default).
* ``prioritized`` (on-demand): the lowest override priority (Karpenter and an ASG's
  MixedInstancesPolicy give the order of their list; Karpenter-AWS with a NodeOverlay's
  price, the overlaid price), then the lowest price.
* ``capacity-optimized-prioritized`` (Spot; Karpenter-AWS's choice when a NodeOverlay
  priced an option): the best capacity score, then the lowest override priority.

Without a Spot market, ``choose_offering`` is the fleet's choice: the lowest price.

A dry pool (capacity score 0) that the rule reaches before a pool with capacity answers
InsufficientInstanceCapacity, which the response lists in ``Errors`` (the caller marks those
offerings unavailable, as Karpenter does); the fleet then takes the next pool in the order.
Capacity-aware strategies rank dry pools last, so they err only when every pool is dry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joiner.api import labels
from joiner.api.requirements import Requirements
from joiner.cloudprovider.launch import launch_candidates
from joiner.cloudprovider.types import InstanceType, Offering

#: How far below the best capacity score a pool still counts as "best capacity" for
#: price-capacity-optimized (a modelling choice; AWS publishes no number).
PCO_CAPACITY_BAND = 2.0


@dataclass(frozen=True, slots=True)
class PoolQuote:
    """One override of the fleet request as the market sees it now.

    Attributes:
        instance_type / offering: the override (the offering names the zone).
        price_per_hour: the pool's price now, USD.
        capacity_score: 0 (dry) to 10; on-demand pools are never dry and score 10.
        priority: the override's priority (lower first), for the prioritized strategies.
        tiebreak: a seeded draw in (0, 1) ordering otherwise equal pools.
    """

    instance_type: InstanceType
    offering: Offering
    price_per_hour: float
    capacity_score: float
    priority: float
    tiebreak: float

    @property
    def dry(self) -> bool:
        return self.capacity_score <= 0.0

    @property
    def pool(self) -> str:
        return f"{self.instance_type.name}/{self.offering.zone}"


@dataclass(frozen=True, slots=True)
class FleetResult:
    """The fleet's answer: the chosen pool (None when every reached pool was dry), the dry
    pools it hit first (``Errors``) and the reason for the choice."""

    chosen: PoolQuote | None
    errors: tuple[PoolQuote, ...]
    reason: str


def _next(strategy: str, pools: Sequence[PoolQuote]) -> tuple[PoolQuote, str]:
    if strategy == "price-capacity-optimized":
        best = max(q.capacity_score for q in pools)
        band = [q for q in pools if q.capacity_score >= best - PCO_CAPACITY_BAND]
        pick = min(band, key=lambda q: (q.price_per_hour, -q.capacity_score, q.tiebreak))
        why = (
            f"lowest price of the {len(band)} pools within {PCO_CAPACITY_BAND:g} of the best "
            f"capacity score {best:.2f}"
        )
        return pick, why
    if strategy == "capacity-optimized":
        pick = min(pools, key=lambda q: (-q.capacity_score, q.price_per_hour, q.tiebreak))
        return pick, "best capacity score"
    if strategy == "lowest-price":
        pick = min(pools, key=lambda q: (q.price_per_hour, -q.capacity_score, q.tiebreak))
        return pick, "lowest price"
    if strategy == "capacity-optimized-prioritized":
        pick = min(pools, key=lambda q: (-q.capacity_score, q.priority, q.tiebreak))
        return pick, "best capacity score, then highest priority"
    if strategy == "prioritized":
        pick = min(pools, key=lambda q: (q.priority, q.price_per_hour, q.tiebreak))
        return pick, f"highest priority (override priority {pick.priority:g})"
    raise ValueError(f"unknown allocation strategy {strategy!r}")


def allocate(strategy: str, pools: Sequence[PoolQuote]) -> FleetResult:
    """Choose one pool for a fleet of capacity 1 (module docstring).

    Raises:
        ValueError: an unknown strategy.
    """
    left = list(pools)
    errors: list[PoolQuote] = []
    while left:
        pick, why = _next(strategy, left)
        if not pick.dry:
            reason = (
                f"{strategy}: {pick.pool} at ${pick.price_per_hour:.4f}/h, capacity score "
                f"{pick.capacity_score:.2f}: {why} (the request offered {len(pools)})"
            )
            if errors:
                reason += f" ({len(errors)} dry pools answered ICE first)"
            return FleetResult(pick, tuple(errors), reason)
        errors.append(pick)
        left.remove(pick)
    return FleetResult(None, tuple(errors), f"{strategy}: every one of {len(pools)} pools is dry")


def choose_offering(
    candidates: Sequence[tuple[InstanceType, Offering]],
    reqs: Requirements,
    *,
    min_values_policy: str = "Strict",
) -> tuple[InstanceType, Offering]:
    """EC2 Fleet's choice for Karpenter among available, allowed (type, offering) pairs
    without a Spot market (plan, controller mode): the shared launch rules
    (``launch_candidates``), then the capacity type by precedence, then the lowest price,
    ties by interruption rate, type name and zone. ``candidates`` must not be empty.

    Raises:
        CreateError: the 60 cheapest types break a requirement's ``minValues`` (unless
            ``min_values_policy`` is ``BestEffort``).
        InsufficientCapacityError: the launch filters leave nothing.
    """
    kept = launch_candidates(candidates, reqs, min_values_policy=min_values_policy)
    allowed_ct = reqs.get_or_exists(labels.CAPACITY_TYPE)
    capacity_type = next(
        ct
        for ct in labels.CAPACITY_TYPE_PRECEDENCE
        if allowed_ct.has(ct) and any(o.capacity_type == ct for _, o in kept)
    )
    chosen = [(it, o) for it, o in kept if o.capacity_type == capacity_type]
    return min(
        chosen,
        key=lambda c: (c[1].price_per_hour, c[1].interruption_rate_per_hour, c[0].name, c[1].zone),
    )

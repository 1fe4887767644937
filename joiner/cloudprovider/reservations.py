"""On-demand capacity reservations (ODCRs) as Karpenter-AWS uses them, shared by both clouds.

* ``CapacityReservation``: one reservation as ``DescribeCapacityReservations`` describes it
  (id, instance type, zone, owner, tags, ``AvailableInstanceCount``, end time, type).
* ``select``: the reservations an EC2NodeClass's ``capacityReservationSelectorTerms`` pick
  (Karpenter-AWS ``capacityreservation.QueriesFromSelectorTerms`` and
  ``DefaultProvider.List``): a term selects by ``id``, or by ``tags`` (all must match; ``*``
  matches any value) with an optional ``ownerID`` and ``instanceMatchCriteria``; only
  ``active`` reservations count; expired ones (end time at or before now) and duplicates are
  dropped; the result is ordered by id (``status.capacityReservations``).
* ``with_reserved_offerings``: each instance type gets one ``reserved`` offering per selected
  reservation of that type (Karpenter-AWS ``offering.DefaultProvider.createOfferings``): the
  reservation's zone, its id, its available count as ``reservation_capacity``, available
  while that count is above 0 and the NodeClass has a subnet in the zone, priced at the
  on-demand price divided by 10,000,000 ("free", yet ordered like on-demand for
  consolidation), so the scheduler and the launch choose it first.
* ``Availability``: Karpenter's in-memory count per reservation (``availabilityCache``):
  synced from the describe answer, decremented on launch (``MarkLaunched``), incremented on
  termination (``MarkTerminated``), set to 0 when a launch into it fails for capacity
  (``MarkUnavailable``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from joiner.api import labels
from joiner.api.objects import CapacityReservationSelectorTerm, NodeClass
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType, Offering, Subnet

#: Karpenter-AWS divides the on-demand price by this for a reserved offering.
RESERVED_PRICE_DIVISOR = 10_000_000.0

#: ``karpenter.k8s.aws/capacity-reservation-type`` of an ordinary ODCR.
RESERVATION_TYPE_DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class CapacityReservation:
    """One capacity reservation (EC2 ``CapacityReservation``).

    Attributes:
        id: ``cr-...``.
        instance_type / zone: what and where it reserves.
        owner_id: the owning account (12 digits).
        instance_count: instances it reserves in total.
        available_count: instances it can still take (``AvailableInstanceCount``).
        tags: its tags, sorted.
        end_time_s: when it ends, in the caller's clock seconds; None: unlimited.
        reservation_type: ``default`` or ``capacity-block``.
        instance_match_criteria: ``targeted`` or ``open``.
        state: ``active`` (others are never selected).
    """

    id: str
    instance_type: str
    zone: str
    owner_id: str = ""
    instance_count: int = 1
    available_count: int = 1
    tags: tuple[tuple[str, str], ...] = ()
    end_time_s: float | None = None
    reservation_type: str = RESERVATION_TYPE_DEFAULT
    instance_match_criteria: str = "targeted"
    state: str = "active"


def term_matches(term: CapacityReservationSelectorTerm, r: CapacityReservation) -> bool:
    """True when ``term`` selects ``r`` (id; or tags, owner and match criteria together)."""
    if term.id:
        return r.id == term.id
    have = dict(r.tags)
    for key, value in term.tags:
        if key not in have or (value != "*" and have[key] != value):
            return False
    if term.owner_id and r.owner_id != term.owner_id:
        return False
    return not (
        term.instance_match_criteria and r.instance_match_criteria != term.instance_match_criteria
    )


def select(
    reservations: Iterable[CapacityReservation],
    terms: Sequence[CapacityReservationSelectorTerm],
    now_s: float,
) -> list[CapacityReservation]:
    """The active, unexpired reservations any term selects, each once, ordered by id."""
    found: dict[str, CapacityReservation] = {}
    for r in reservations:
        if r.state != "active" or (r.end_time_s is not None and r.end_time_s <= now_s):
            continue
        if any(term_matches(t, r) for t in terms):
            found.setdefault(r.id, r)
    return [found[k] for k in sorted(found)]


def reserved_offering(
    r: CapacityReservation, zone_ids: Mapping[str, str], on_demand_price: float | None, count: int
) -> Offering:
    """The ``reserved`` offering of ``r`` (module docstring); ``zone_ids`` maps the
    NodeClass's subnet zones to their ids (a zone outside it makes the offering
    unavailable); a missing on-demand price gives price 0, as Karpenter does."""
    price = on_demand_price / RESERVED_PRICE_DIVISOR if on_demand_price is not None else 0.0
    return Offering(
        zone=r.zone,
        zone_id=zone_ids.get(r.zone, ""),
        capacity_type=labels.CAPACITY_TYPE_RESERVED,
        price_per_hour=price,
        available=count > 0 and r.zone in zone_ids,
        reservation_id=r.id,
        reservation_capacity=max(count, 0),
    )


def reserved_like(on_demand: Offering, reservation_id: str) -> Offering:
    """The reserved offering an instance running in ``reservation_id`` has, from its type's
    on-demand offering in that zone (priced as ``reserved_offering`` prices it)."""
    return replace(
        on_demand,
        capacity_type=labels.CAPACITY_TYPE_RESERVED,
        price_per_hour=on_demand.price_per_hour / RESERVED_PRICE_DIVISOR,
        reservation_id=reservation_id,
        reservation_capacity=0,
    )


def with_reserved_offerings(
    types: Sequence[InstanceType],
    reservations: Sequence[CapacityReservation],
    zone_ids: Mapping[str, str],
    count_of: Mapping[str, int],
) -> list[InstanceType]:
    """``types`` with a ``reserved`` offering per reservation of their name appended, and
    ``reserved`` added to their capacity-type requirement; types without a reservation are
    returned unchanged (the same objects). ``count_of`` gives each reservation's available
    count (default: the reservation's own ``available_count``)."""
    by_type: dict[str, list[CapacityReservation]] = {}
    for r in reservations:
        by_type.setdefault(r.instance_type, []).append(r)
    if not by_type:
        return list(types)
    out = []
    for it in types:
        mine = by_type.get(it.name)
        if not mine:
            out.append(it)
            continue
        od = [o.price_per_hour for o in it.offerings if o.capacity_type == "on-demand"]
        extra = tuple(
            reserved_offering(
                r, zone_ids, max(od) if od else None, count_of.get(r.id, r.available_count)
            )
            for r in mine
        )
        cts = it.requirements.get(labels.CAPACITY_TYPE)
        values = (cts.values if cts is not None and not cts.complement else frozenset()) | {
            labels.CAPACITY_TYPE_RESERVED
        }
        reqs = Requirements(
            [
                *(it.requirements[k] for k in it.requirements if k != labels.CAPACITY_TYPE),
                Requirement(labels.CAPACITY_TYPE, False, frozenset(values)),
            ]
        )
        out.append(replace(it, requirements=reqs, offerings=(*it.offerings, *extra)))
    return out


def free_counts(
    reservations: Iterable[CapacityReservation], running: Iterable[Offering]
) -> dict[str, int]:
    """EC2's ``AvailableInstanceCount`` of each reservation: its size minus the running
    instances (given by their offerings) launched into it."""
    used: dict[str, int] = {}
    for o in running:
        if o.reservation_id:
            used[o.reservation_id] = used.get(o.reservation_id, 0) + 1
    return {r.id: r.instance_count - used.get(r.id, 0) for r in reservations}


def nodeclass_types(
    types: Sequence[InstanceType],
    reservations: Sequence[CapacityReservation],
    nc: NodeClass,
    subnets: Sequence[Subnet],
    now_s: float,
    count_of: Mapping[str, int],
) -> list[InstanceType]:
    """``types`` with the reserved offerings of the reservations ``nc`` selects now, in the
    zones of its ``subnets`` (``select`` then ``with_reserved_offerings``)."""
    chosen = select(reservations, nc.capacity_reservation_selector_terms, now_s)
    if not chosen:
        return list(types)
    zone_ids = {s.zone: s.zone_id for s in subnets}
    return with_reserved_offerings(types, chosen, zone_ids, count_of)


def reservation_labels(o: Offering) -> dict[str, str]:
    """The labels a node launched into ``o`` carries for its reservation (none unless
    reserved; Karpenter-AWS sets ``capacity-reservation-id`` and ``-type``)."""
    if not o.reservation_id:
        return {}
    return {
        labels.CAPACITY_RESERVATION_ID: o.reservation_id,
        labels.CAPACITY_RESERVATION_TYPE: RESERVATION_TYPE_DEFAULT,
    }


def status_entry(r: CapacityReservation) -> dict[str, object]:
    """One EC2NodeClass ``status.capacityReservations`` entry, in Karpenter-AWS's shape
    (``v1.CapacityReservation``: id, instanceType, availabilityZone, ownerID,
    instanceMatchCriteria, reservationType, state; ``endTime`` only when it ends)."""
    out: dict[str, object] = {
        "id": r.id,
        "instanceType": r.instance_type,
        "availabilityZone": r.zone,
        "ownerID": r.owner_id,
        "instanceMatchCriteria": r.instance_match_criteria,
        "reservationType": r.reservation_type,
        "state": r.state,
    }
    if r.end_time_s is not None:
        out["endTimeSeconds"] = r.end_time_s
    return out


class Availability:
    """Karpenter-AWS's in-memory available count per reservation (``availabilityCache``).

    ``sync`` takes EC2's counts; ``mark_launched`` takes one off (never below 0),
    ``mark_terminated`` gives one back, ``mark_unavailable`` sets 0 until the next sync (a
    launch that hit ``ReservationCapacityExceeded``). An unknown id counts 0.
    """

    def __init__(self) -> None:
        self._count: dict[str, int] = {}

    def sync(self, reservations: Iterable[CapacityReservation]) -> None:
        """Take each reservation's ``available_count`` as the truth."""
        for r in reservations:
            self._count[r.id] = r.available_count

    def count(self, reservation_id: str) -> int:
        """Instances the reservation can still take, as far as Karpenter knows."""
        return self._count.get(reservation_id, 0)

    def counts(self) -> dict[str, int]:
        """Every known count, by id."""
        return dict(self._count)

    def mark_launched(self, reservation_id: str) -> None:
        """One instance launched into it."""
        if reservation_id in self._count and self._count[reservation_id] > 0:
            self._count[reservation_id] -= 1

    def mark_terminated(self, reservation_id: str) -> None:
        """One of its instances terminated."""
        if reservation_id in self._count:
            self._count[reservation_id] += 1

    def mark_unavailable(self, *reservation_ids: str) -> None:
        """A launch into it failed for capacity: 0 until the next sync."""
        for rid in reservation_ids:
            if rid in self._count:
                self._count[rid] = 0


def reservations_requirement(ids: Sequence[str]) -> Requirements:
    """``capacity-type In [reserved]`` and ``capacity-reservation-id In ids``."""
    return Requirements(
        [
            Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_RESERVED),
            Requirement.in_(labels.CAPACITY_RESERVATION_ID, *ids),
        ]
    )

"""Reserved capacity within one provisioning simulation (Karpenter core
``scheduling/reservationmanager.go`` and ``NodeClaim.reserveOfferings``, strict mode, as the
provisioner uses it; gate ``ReservedCapacity``).

Each reserved offering can take ``reservation_capacity`` more instances. A NodeClaim of the
solve holds, pessimistically, *every* compatible reserved offering among its instance-type
options (it does not know which one the launch will use), while that reservation has a
holder slot left or it already holds it. Adding a pod to a NodeClaim fails when
compatible reserved offerings exist but the NodeClaim can hold none of them (other
NodeClaims of this solve hold every slot), or when it held some and the pod leaves none
compatible: Karpenter then fails the pod for this simulation, without relaxing its
preferences or falling back to lower-weight NodePools, and tries again next pass, by which
time the launches have used the reservations and their offerings are unavailable. A
NodeClaim that holds reservations is pinned to ``capacity-type In [reserved]`` and
``capacity-reservation-id In [its ids]`` when the solve ends (``FinalizeScheduling``).
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api import labels
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.scheduling.pool import IntArray

#: Why a pod could not join a NodeClaim (it is retried next pass, as in Karpenter).
HELD_ELSEWHERE = (
    "its reserved offerings are held by other NodeClaims of this pass (Karpenter's "
    "ReservedOfferingError; the pod is tried again next pass)"
)
#: Why a pod could not join a NodeClaim that holds reservations.
OUTGROWS = (
    "the pod would leave the NodeClaim none of the reserved offerings it holds (Karpenter's "
    "ReservedOfferingError)"
)


#: Whether a type list offers any reservation, by the list's identity, with the list (kept
#: alive so the identity stays valid). Prepared pools share one type list across solves
#: (``pool.prepare``), so this is answered once per list, not once per solve.
_OFFERED: dict[int, tuple[Sequence[InstanceType], bool]] = {}
_OFFERED_MAX = 4096


def offered(types: Sequence[InstanceType]) -> bool:
    """True when some type of ``types`` has a reserved offering (available or not):
    otherwise ``Reservations.choose`` holds nothing for a NodeClaim of them."""
    hit = _OFFERED.get(id(types))
    if hit is not None and hit[0] is types:
        return hit[1]
    found = any(o.reservation_id for it in types for o in it.offerings)
    if len(_OFFERED) >= _OFFERED_MAX:
        _OFFERED.clear()
    _OFFERED[id(types)] = (types, found)
    return found


class Reservations:
    """The solve's reservation holders (module docstring). Claims are solve indices.

    ``choose`` memoises per type list (``offered``): the lists it is given must never
    change (a prepared pool's never does)."""

    def __init__(self) -> None:
        self._holders: dict[str, set[int]] = {}
        self._capacity: dict[str, int] = {}
        self._held: dict[int, frozenset[str]] = {}

    def choose(
        self, claim: int, types: Sequence[InstanceType], options: IntArray, reqs: Requirements
    ) -> tuple[frozenset[str], str | None]:
        """The reservation ids ``claim`` would hold with instance-type ``options`` (indices
        into ``types``) under ``reqs``, and why the pod cannot join (None when it can)."""
        held = self._held.get(claim, frozenset())
        if not offered(types):
            return frozenset(), None
        compatible: list[Offering] = [
            o
            for i in options.tolist()
            for o in types[i].offerings
            if o.reservation_id and o.available and o.compatible(reqs)
        ]
        ids = set()
        for o in compatible:
            rid = o.reservation_id
            self._capacity.setdefault(rid, o.reservation_capacity)
            holders = self._holders.get(rid, set())
            if claim in holders or len(holders) < self._capacity[rid]:
                ids.add(rid)
        if compatible and not ids:
            return frozenset(), HELD_ELSEWHERE
        if held and not ids:
            return frozenset(), OUTGROWS
        return frozenset(ids), None

    def hold(self, claim: int, ids: frozenset[str]) -> None:
        """``claim`` now holds exactly ``ids`` (others it held are released)."""
        for rid in self._held.get(claim, frozenset()) - ids:
            self._holders[rid].discard(claim)
        for rid in ids:
            self._holders.setdefault(rid, set()).add(claim)
        self._held[claim] = ids

    def pinned(self, claim: int, reqs: Requirements) -> Requirements:
        """``reqs`` pinned to the reservations ``claim`` holds (unchanged when none)."""
        ids = self._held.get(claim)
        if not ids:
            return reqs
        return reqs.add(
            Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_RESERVED),
            Requirement.in_(labels.CAPACITY_RESERVATION_ID, *sorted(ids)),
        )

"""A solve's ``StopRule``: stop as soon as the caller's answer is decided (consolidation's;
Joiner's own speed-up, not an upstream rule, and exact: a stop only ever replaces a plan
that ``computeConsolidation`` would reject).

Consolidation (Karpenter ``disruption/consolidation.go`` ``computeConsolidation``) rejects a
simulation whose moving pods need more than one new NodeClaim; a single replacement none of
whose instance types has a worst launch price below the candidates' summed price; and, when
every candidate is spot and the ``SpotToSpotConsolidation`` gate is off, a replacement that
could launch as spot, whatever its price (``computeSpotToSpotConsolidation``). ``StopCheck``
stops on each of these once the rest of the solve cannot change it.
"""

from __future__ import annotations

import numpy as np

from joiner.api import labels
from joiner.api.requirements import NOT_IN, Requirement
from joiner.scheduling.base import base_of
from joiner.scheduling.placement import _Claim, referenced_keys
from joiner.scheduling.pool import IntArray, PreparedPool
from joiner.scheduling.types import PodRequest, SchedulingInput, StopReason, StopRule

#: Keys whose narrowing could take a rejected capacity type away from a NodeClaim.
_PINNING_KEYS = frozenset(
    {labels.CAPACITY_TYPE, labels.CAPACITY_RESERVATION_ID, labels.CAPACITY_RESERVATION_TYPE}
)
#: Keys checked zone by zone rather than by label (``launches_as``).
_ZONE_KEYS = frozenset({labels.ZONE, labels.ZONE_ID})
_RESERVED = frozenset({labels.CAPACITY_TYPE_RESERVED})


class Stopped(Exception):
    """Raised inside a solve when its ``StopRule`` has decided the caller's answer:
    ``reason`` is the rule, the message says why in English (it follows "can't
    consolidate: ")."""

    def __init__(self, reason: StopReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StopCheck:
    """One solve's ``StopRule`` state: the NodeClaims holding a watched pod, and the label
    keys the solve's pods refer to (computed on first need)."""

    def __init__(self, stop: StopRule, inp: SchedulingInput) -> None:
        self.stop = stop
        self._inp = inp
        #: Indices of the solve's NodeClaims holding a pod of ``stop.pods``.
        self._watched: set[int] = set()
        self._referenced: frozenset[str] | None = None

    def check(self, claim: _Claim, pod: PodRequest) -> None:
        """``pod`` was just added to ``claim``: raise ``Stopped`` if the answer is decided.

        NodeClaim options only narrow as pods are added, and a type's worst launch price is
        never below its cheapest offering under the NodePool's requirements, so the price
        rule stops once a NodeClaim holding a watched pod has no option whose cheapest
        offering other than a rejected capacity type is below ``stop.price_per_hour``.
        """
        stop = self.stop
        if pod.uid in stop.pods:
            self._watched.add(claim.index)
            if len(self._watched) > 1:
                raise Stopped(StopReason.MORE_THAN_ONE_NODE, "its pods need more than one new node")
        if stop.price_per_hour is None or claim.index not in self._watched:
            return
        rejected = stop.rejected_capacity_types
        if rejected and launches_as(claim, rejected, self.referenced()):
            other = ", ".join(sorted(rejected))
            raise Stopped(
                StopReason.REJECTED_CAPACITY_TYPE,
                f"its pods need a new node, and it could launch as {other}",
            )
        pool = claim.pool
        reqs = pool.nodepool.requirements
        if rejected:
            reqs = reqs.add(Requirement.new(labels.CAPACITY_TYPE, NOT_IN, rejected))
        floor = float(pool.prices(reqs)[claim.options].min())
        if floor >= stop.price_per_hour:
            other = ", ".join(sorted(rejected))
            raise Stopped(
                StopReason.NOT_CHEAPER,
                f"no instance type that fits its pods costs less than ${stop.price_per_hour:.4f}/h"
                + (f" other than as {other}" if other else ""),
            )

    def referenced(self) -> frozenset[str]:
        """Label keys the solve's pods (node selection, preferences, volumes, topology) and
        every running pod's required anti-affinity refer to."""
        if self._referenced is None:
            inp = self._inp
            anti = base_of(inp.existing, inp.bound_pods).anti_keys
            self._referenced = referenced_keys(inp.pods, (), ()) | {key for _n, key in anti}
        return self._referenced


def launches_as(claim: _Claim, rejected: frozenset[str], keys: frozenset[str]) -> bool:
    """Whatever pods join ``claim`` later, the NodeClaim it ends as has an instance type with
    an available offering of a ``rejected`` capacity type that its requirements allow (then
    consolidation rejects it: spot-to-spot with its gate off). ``keys``: the label keys the
    solve's pods and running pods' anti-affinity refer to.

    Options and zones only narrow as pods join: by resources (a type stays while its
    allocatable net of DaemonSet overhead holds the pods), by requirements and topology on
    ``keys``, and by zone. The end has at least one option with an offering in an allowed
    zone. So it is enough that, in every zone the requirements allow, each option offered
    there only as other capacity types is dominated by an option offered there as a rejected
    one: as much room in every resource and the same labels on every key of ``keys``.
    Nothing may narrow the capacity type or pin the NodeClaim to a reservation: no key of
    ``keys`` selects them, and the NodePool has no reserved offering. Offerings are taken
    under the NodePool's requirements, in the zones the NodeClaim's zone requirement allows;
    a zone that its zone-ID requirement rules out is checked too, which only adds conditions.
    """
    if keys & _PINNING_KEYS:
        return False
    pool = claim.pool
    if _has_reserved(pool):
        return False
    zone = claim.requirements.get(labels.ZONE)
    allowed = [z for z in sorted(pool.domains(labels.ZONE)) if zone is None or zone.has(z)]
    if not allowed:
        return False
    return _dominated(pool, tuple(allowed), claim.options, rejected, keys)


def every_claim_launches_as(
    pool: PreparedPool, rejected: frozenset[str], keys: frozenset[str]
) -> bool:
    """``launches_as`` holds for every NodeClaim ``pool`` could open in a solve whose pods
    and running pods' anti-affinity refer to no label key outside ``keys`` (a superset of
    the solve's own keys only adds conditions), whatever pods join it: the same dominance
    test over every zone the pool launches into and all its instance types. A NodeClaim's
    options start as the types within the NodePool's limits and narrow only as
    ``launches_as`` says, and a dominating type is never the one of a pair dropped, so the
    pool-wide answer bounds every NodeClaim's. A pool with limits (which drop the larger
    types first) or a reserved offering answers False. Raises nothing.

    Consolidation's pre-check (``controllers.disruption.room``) uses it to skip simulating a
    spot candidate whose pods need a new node while spot-to-spot consolidation is off."""
    if keys & _PINNING_KEYS or pool.remaining or not pool.types or _has_reserved(pool):
        return False
    zones = tuple(sorted(pool.domains(labels.ZONE)))
    if not zones:
        return False
    return _dominated(pool, zones, np.arange(len(pool.types), dtype=np.int64), rejected, keys)


def _has_reserved(pool: PreparedPool) -> bool:
    """Some type of ``pool`` has an available reserved offering its requirements allow (a
    NodeClaim could be pinned to the reservation)."""
    return any(pool.offered_in(z, _RESERVED).any() for z in pool.domains(labels.ZONE))


def _dominated(
    pool: PreparedPool,
    allowed: tuple[str, ...],
    options: IntArray,
    rejected: frozenset[str],
    keys: frozenset[str],
) -> bool:
    """In every zone of ``allowed``, each of ``options`` offered there only as capacity types
    other than ``rejected`` has a peer in ``options`` offered there as a rejected one with
    the same labels on ``keys`` (zone keys aside) and at least as much net room in every
    resource; memoised on the pool."""
    memo = (allowed, rejected, keys, options.tobytes())
    found = pool.dominance.get(memo)
    if found is not None:
        return found
    signature = pool.signature(keys - _ZONE_KEYS)[options]
    net = pool.net[options]
    found = True
    for z in allowed:
        offered = pool.offered_in(z)[options]
        good = pool.offered_in(z, rejected)[options]
        bad = np.flatnonzero(offered & ~good)
        if bad.size == 0:
            continue
        peers = np.flatnonzero(good)
        # (bad, peer): the peer has the bad option's labels and as much of every resource.
        same = signature[peers][None, :] == signature[bad][:, None]
        roomier = (net[peers][None, :, :] >= net[bad][:, None, :]).all(axis=2)
        if not (same & roomier).any(axis=1).all():
            found = False
            break
    if len(pool.dominance) >= 65536:
        pool.dominance.clear()
    pool.dominance[memo] = found
    return found

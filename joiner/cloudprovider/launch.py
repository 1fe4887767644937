"""Launch rules shared by every CloudProvider adapter (Karpenter-AWS ``instance.go``).

* ``launch_candidates``: the filters Karpenter-AWS applies before CreateFleet
  (``pkg/providers/instance/instance.go`` ``filterInstanceTypes`` with the
  ``instancefilter`` filters, in order: compatible-and-available, which the caller does;
  ``ReservedOfferingFilter``; ``ExoticInstanceTypeFilter``; ``SpotInstanceFilter``), then
  the cut to the
  ``MAX_LAUNCH_INSTANCE_TYPES`` (60) cheapest types, which must still meet every
  requirement's ``minValues`` (Karpenter core ``InstanceTypes.Truncate``).
* ``filter_reserved``: when reserved capacity is allowed and offered, only reserved
  offerings, one per (type, zone).
* ``filter_exotic``: drop metal, GPU and accelerator types when others remain.
* ``filter_unwanted_spot``: drop types with a Spot offering that costs more than the
  cheapest compatible on-demand offering.
* ``choose_capacity_type``: the first of reserved, spot, on-demand (``CAPACITY_TYPE_PRECEDENCE``)
  that the request allows and that has a candidate offering.
* ``UnavailableOfferings``: the 3-minute cache of offerings that hit ICE or an interruption.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from joiner.api import labels
from joiner.api.requirements import Requirements
from joiner.cloudprovider.instancetype import (
    AMD_GPU,
    AWS_NEURON,
    AWS_NEURON_CORE,
    HABANA_GAUDI,
    NVIDIA_GPU,
)
from joiner.cloudprovider.types import (
    CreateError,
    InstanceType,
    InsufficientCapacityError,
    Offering,
)

#: Karpenter's UnavailableOfferingsTTL: an interrupted or ICE'd offering is skipped this long.
UNAVAILABLE_OFFERING_TTL_S = 180.0

#: Karpenter-AWS ``maxInstanceTypes``: the instance types one CreateFleet request may carry.
MAX_LAUNCH_INSTANCE_TYPES = 60

#: The resources that make a type "exotic" (Karpenter-AWS ``exoticInstanceFilter.isExotic``).
EXOTIC_RESOURCES = (AWS_NEURON, AWS_NEURON_CORE, AMD_GPU, NVIDIA_GPU, HABANA_GAUDI)

Candidate = tuple[InstanceType, Offering]
PriceOf = Callable[[InstanceType, Offering], float]


def _listed_price(_it: InstanceType, o: Offering) -> float:
    return o.price_per_hour


def is_exotic(it: InstanceType) -> bool:
    """A metal size (``metal`` anywhere in ``karpenter.k8s.aws/instance-size``, so
    ``metal-24xl`` too) or any GPU/accelerator capacity (``EXOTIC_RESOURCES``)."""
    size = it.requirements.get(labels.INSTANCE_SIZE)
    if size is not None and not size.complement and any("metal" in v for v in size.values):
        return True
    return any(it.capacity.get(r, 0) > 0 for r in EXOTIC_RESOURCES)


def has_min_values(reqs: Requirements) -> bool:
    """Some requirement sets ``minValues`` (then Karpenter-AWS keeps exotic types:
    ``instancefilter.ExoticInstanceTypeFilter`` is skipped)."""
    return any(r.min_values is not None for r in reqs.values())


def has_reserved_offering(it: InstanceType, reqs: Requirements) -> bool:
    """``it`` has an available reserved offering ``reqs`` allow (Karpenter-AWS
    ``instancefilter.ReservedOfferingFilter`` then launches only such offerings, before the
    exotic filter)."""
    return any(
        o.capacity_type == labels.CAPACITY_TYPE_RESERVED and o.available and o.compatible(reqs)
        for o in it.offerings
    )


def kept_out_as_exotic(it: InstanceType, reqs: Requirements) -> bool:
    """Karpenter-AWS leaves ``it`` out while a non-exotic option remains
    (``instancefilter.ExoticInstanceTypeFilter``): it is exotic, has no reserved offering
    ``reqs`` allow, and no requirement of ``reqs`` sets ``minValues``."""
    return is_exotic(it) and not has_reserved_offering(it, reqs) and not has_min_values(reqs)


def filter_reserved(candidates: Sequence[Candidate], reqs: Requirements) -> list[Candidate]:
    """Only the reserved candidates, one per (type, zone): the one whose reservation has the
    most room (ties by reservation id), when ``reqs`` allow ``reserved`` and any candidate
    is reserved; else the input unchanged.

    Karpenter-AWS ``instancefilter.ReservedOfferingFilter``: CreateFleet takes one override
    per pool, and a launch that may use reserved capacity uses only that (a type without a
    reserved offering is rejected unless no type has one). It runs before the exotic filter,
    so a reservation of GPU or metal types is launched into.
    """
    if not reqs.get_or_exists(labels.CAPACITY_TYPE).has(labels.CAPACITY_TYPE_RESERVED):
        return list(candidates)
    best: dict[tuple[str, str], Candidate] = {}
    for c in candidates:
        o = c[1]
        if o.capacity_type != labels.CAPACITY_TYPE_RESERVED:
            continue
        key = (c[0].name, o.zone)
        cur = best.get(key)
        if cur is None or (-o.reservation_capacity, o.reservation_id) < (
            -cur[1].reservation_capacity,
            cur[1].reservation_id,
        ):
            best[key] = c
    if not best:
        return list(candidates)
    return [c for c in candidates if best.get((c[0].name, c[1].zone)) is c]


def filter_exotic(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Drop exotic types (``is_exotic``) unless every candidate is exotic.

    Karpenter-AWS ``instancefilter.ExoticInstanceTypeFilter``: metal, GPU and accelerator
    types launch only when the NodeClaim leaves nothing else (a GPU pod's claim offers only
    GPU types, so it keeps them).
    """
    generic = []
    last: InstanceType | None = None
    exotic = False
    for it, o in candidates:
        if it is not last:  # a type's offerings come together: one look per run of them
            hit = _EXOTIC.get(id(it))  # per type, not per offering: a type has a dozen
            if hit is None or hit[0] is not it:
                if len(_EXOTIC) >= _EXOTIC_MAX:
                    _EXOTIC.clear()
                hit = _EXOTIC[id(it)] = (it, is_exotic(it))
            last, exotic = it, hit[1]
        if not exotic:
            generic.append((it, o))
    return generic if generic else list(candidates)


#: ``is_exotic`` by type identity, with the type (kept alive so the identity stays valid;
#: instance types are immutable, and launches reuse the cloud's type objects).
_EXOTIC: dict[int, tuple[InstanceType, bool]] = {}
_EXOTIC_MAX = 1 << 14


def filter_unwanted_spot(
    candidates: Sequence[Candidate],
    reqs: Requirements | None = None,
    price: PriceOf = _listed_price,
) -> list[Candidate]:
    """Drop every type with a Spot candidate priced above the cheapest on-demand candidate.

    Karpenter-AWS ``instancefilter.SpotInstanceFilter``: it keeps a larger Spot type from
    winning over a cheaper, sufficient on-demand one. It applies only when ``reqs`` allow both
    capacity types (None: not checked) and there are both Spot and on-demand candidates;
    otherwise the input is returned unchanged. A type is dropped whole when any of its Spot
    offerings costs more, as Karpenter's filter rejects the type; the result can be empty
    (``launch_candidates`` then fails the launch with ICE, as Karpenter does).

    ``price`` gives an offering's current price (the Spot market's pool price in the
    simulation; the listed price by default).
    """
    if reqs is not None:
        allowed = reqs.get_or_exists(labels.CAPACITY_TYPE)
        if not (allowed.has(labels.CAPACITY_TYPE_SPOT) and allowed.has("on-demand")):
            return list(candidates)
    on_demand = [price(it, o) for it, o in candidates if o.capacity_type == "on-demand"]
    if not on_demand or all(o.capacity_type == "on-demand" for _, o in candidates):
        return list(candidates)
    cheapest_od = min(on_demand)
    unwanted = {
        it.name
        for it, o in candidates
        if o.capacity_type == labels.CAPACITY_TYPE_SPOT and price(it, o) > cheapest_od
    }
    return [(it, o) for it, o in candidates if it.name not in unwanted]


def min_values_shortfall(types: Sequence[InstanceType], reqs: Requirements) -> str | None:
    """The first requirement (by key) whose ``minValues`` ``types`` do not reach, described,
    or None. Values are counted over each type's own requirement for the key (a type offered
    in three zones counts three zones), as Karpenter's ``SatisfiesMinValues`` does."""
    for key, r in sorted(reqs.items()):
        if r.min_values is None:
            continue
        values: set[str] = set()
        for it in types:
            own = it.requirements.get(key)
            if own is not None and not own.complement:
                values.update(own.values)
        if len(values) < r.min_values:
            return (
                f"{key} has minValues {r.min_values} but the {len(types)} cheapest instance "
                f"types keep only {len(values)} distinct value(s)"
            )
    return None


def launch_candidates(
    candidates: Sequence[Candidate],
    reqs: Requirements,
    *,
    price: PriceOf = _listed_price,
    max_types: int = MAX_LAUNCH_INSTANCE_TYPES,
    min_values_policy: str = "Strict",
) -> list[Candidate]:
    """The (type, offering) pairs one CreateFleet request may use, cheapest types first.

    ``candidates`` are the NodeClaim's available, compatible offerings (the caller applies
    Karpenter's ``CompatibleAvailableFilter`` and the unavailable-offerings cache). Then, as
    Karpenter-AWS ``instance.go`` ``filterInstanceTypes``: ``filter_reserved``, then
    ``filter_exotic`` and
    ``filter_unwanted_spot``, both skipped when a requirement has ``minValues`` (so the
    flexibility the user asked for survives); then Karpenter core ``InstanceTypes.Truncate``:
    the ``max_types`` types with the cheapest candidate (by ``price``; ties by name), which
    must still meet every ``minValues`` unless ``min_values_policy`` is ``BestEffort``.

    Raises:
        InsufficientCapacityError: the unwanted-Spot filter leaves nothing (every type has a
            Spot offering dearer than the cheapest on-demand one): Karpenter's
            ``filterInstanceTypes`` answers "all requested instance types were unavailable
            during launch".
        CreateError: reason ``MinValuesUnsatisfied`` when the cut types break ``minValues``
            (Karpenter fails the launch: "truncating instance types, validating minValues").
    """
    has_min_values = any(r.min_values is not None for r in reqs.values())
    kept = filter_reserved(candidates, reqs)
    if not has_min_values:
        kept = filter_unwanted_spot(filter_exotic(kept), reqs, price)
        if candidates and not kept:
            raise InsufficientCapacityError(
                "all requested instance types were unavailable during launch (each has a "
                "Spot offering dearer than the cheapest on-demand offering)"
            )
    cheapest: dict[str, float] = {}
    types: dict[str, InstanceType] = {}
    for it, o in kept:
        p = price(it, o)
        if p < cheapest.get(it.name, float("inf")):
            cheapest[it.name] = p
        types[it.name] = it
    names = sorted(cheapest, key=lambda n: (cheapest[n], n))[:max_types]
    if has_min_values and min_values_policy != "BestEffort":
        short = min_values_shortfall([types[n] for n in names], reqs)
        if short is not None:
            raise CreateError(
                "MinValuesUnsatisfied",
                f"truncating instance types to {max_types}, validating minValues: {short}",
            )
    rank = {n: i for i, n in enumerate(names)}
    return sorted(
        ((it, o) for it, o in kept if it.name in rank),
        key=lambda c: (rank[c[0].name], c[1].zone, c[1].capacity_type),
    )


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

"""A deterministic EC2 stand-in: subnets, security groups, instance types and launches.

Launch follows Karpenter's CreateFleet request (karpenter-provider-aws
``pkg/providers/instance/instance.go`` ``launchInstance``) through the shared
launch rules (``launch.launch_candidates``: exotic and unwanted-Spot types dropped unless a
requirement has ``minValues``, the list cut to the 60 types with the cheapest pools, which
must still meet ``minValues``); then the capacity type is chosen (spot before on-demand when
both are allowed and any compatible spot offering is available), and the overrides (each
type x one subnet per zone) go to one fleet request. With a ``SpotMarket`` (the
simulation), the fleet's allocation strategy (``fleet.allocate``: price-capacity-optimized
for Karpenter's Spot) picks the pool from each pool's current price and capacity score;
Spot prices are per pool and move with the market, and reclaims are pool events
(``reclaims.PoolReclaims``). Without one (plan, controller mode), prices are regional and
the lowest price wins, ties broken by lower interruption rate, then instance-type name,
then zone (``fleet.choose_offering``). NodeClass selector terms resolve against the VPC in
``selectors``, its capacity reservation terms in ``reservations`` (``reserved`` offerings).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from joiner.api import labels
from joiner.api.clock import Clock
from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider import nodeclass_status as ncs
from joiner.cloudprovider.catalog import Catalog, spot_price
from joiner.cloudprovider.events import SPOT_INTERRUPTION, STATE_CHANGE, CloudEvent
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.launch import (
    UNAVAILABLE_OFFERING_TTL_S,
    choose_capacity_type,
    launch_candidates,
)
from joiner.cloudprovider.launchtemplates import LAUNCH_TEMPLATE_TTL_S, SimulatedLaunchTemplates
from joiner.cloudprovider.nodeclass_drift import (
    NODECLASS_HASH_TAG,
    nodeclass_hash,
    static_drift,
)
from joiner.cloudprovider.reservations import CapacityReservation, free_counts, nodeclass_types
from joiner.cloudprovider.simulated.fleet import PoolQuote, allocate, choose_offering
from joiner.cloudprovider.simulated.launchfaults import LaunchFailures
from joiner.cloudprovider.simulated.market import (
    NOTICE_S,
    PRICE_EPOCH_S,
    HazardModel,
    RateOverride,
    ReclaimEvent,
    SpotMarket,
)
from joiner.cloudprovider.simulated.reclaims import PoolReclaims
from joiner.cloudprovider.simulated.selectors import (
    SubnetMemo,
    default_subnets,
    resolve_security_groups,
    unresolved_terms,
)
from joiner.cloudprovider.simulated.selectors import matches as _matches
from joiner.cloudprovider.types import (
    Allocation,
    CreateError,
    Instance,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    Offering,
    SecurityGroup,
    Subnet,
)

__all__ = [
    "HazardModel",
    "RateOverride",
    "SimulatedCloudProvider",
    "_matches",
    "choose_offering",
    "default_subnets",
]

#: The tag Karpenter puts on instances naming their EC2NodeClass.
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"


EventListener = Callable[[CloudEvent], None]
ReclaimListener = Callable[[Instance], None]


class SimulatedCloudProvider:
    """CloudProvider over the packaged catalog; see the module docstring for launch rules.

    With a ``market`` it also plays EC2's Spot market: pool prices and capacity decide
    launches, and each pool's crunches send rebalance recommendations, 2-minute notices and
    reclaims to the Spot instances running there (on ``clock``), delivered to
    ``event_listeners``; a reclaimed instance is gone, and ``reclaim_listeners`` hear of it.
    ``reclaim_events`` lists the pool events that took instances. Offerings marked
    unavailable (ICE, interruption) are skipped for ``UNAVAILABLE_OFFERING_TTL_S``.
    """

    def __init__(
        self,
        catalog: Catalog,
        region: str,
        clock: Clock,
        rng: random.Random,
        *,
        subnets: Sequence[Subnet],
        security_groups: Sequence[SecurityGroup],
        node_classes: Sequence[NodeClass],
        market: SpotMarket | None = None,
        launch_template_ttl_s: float = LAUNCH_TEMPLATE_TTL_S,
        reservations: Sequence[CapacityReservation] = (),
    ) -> None:
        self.catalog = catalog
        #: Launch templates as Karpenter-AWS keeps them (``cloudprovider/launchtemplates.py``).
        self.launch_templates = SimulatedLaunchTemplates(clock.now, launch_template_ttl_s)
        #: The account's capacity reservations (empty when the ReservedCapacity gate is off).
        self.reservations = tuple(reservations)
        self.market = market
        self._pools = (
            PoolReclaims(market, clock, self._emit, self.reclaim) if market is not None else None
        )
        self._priced: dict[tuple[str, int], list[InstanceType]] = {}
        self._marked_types: dict[
            tuple[str, int, frozenset[tuple[str, str, str]]],
            tuple[list[InstanceType], list[InstanceType]],
        ] = {}
        #: Regional Spot price per pool, from the catalog (the market's model centre).
        self._regional: dict[str, float] = {}
        self.event_listeners: list[EventListener] = []
        self.reclaim_listeners: list[ReclaimListener] = []
        self._unavailable: dict[tuple[str, str, str], float] = {}
        self._launch_failures = LaunchFailures()
        self.region = region
        self._clock = clock
        self._rng = rng
        self.subnets = list(subnets)
        self._resolved_subnets = SubnetMemo()
        self.security_groups = list(security_groups)
        self.node_classes = {n.name: n for n in node_classes}
        self._types: dict[str, list[InstanceType]] = {}
        self._instances: dict[str, Instance] = {}

    def set_node_classes(self, node_classes: Sequence[NodeClass]) -> None:
        """Replace the NodeClasses (controller mode: an EC2NodeClass changed in the API);
        instance types are resolved again on next use; a NodeClass gone loses its templates."""
        self.launch_templates.delete_removed(self.node_classes, [n.name for n in node_classes])
        self.node_classes = {n.name: n for n in node_classes}
        self._types.clear()
        self._priced.clear()
        self._marked_types.clear()

    # -- NodeClass resolution ------------------------------------------------------------

    def resolve_subnets(self, node_class: NodeClass) -> list[Subnet]:
        """Subnets any selector term matches (``selectors.resolve_subnets``; ``SubnetMemo``
        remembers the answer per NodeClass object)."""
        return self._resolved_subnets.resolve(self.subnets, node_class)

    def resolve_security_groups(self, node_class: NodeClass) -> list[SecurityGroup]:
        """Security groups any selector term matches (``selectors.resolve_security_groups``)."""
        return resolve_security_groups(self.security_groups, node_class)

    def node_class_status(self, name: str) -> ncs.NodeClassStatus | None:
        """Every part of a known NodeClass Ready, with a message saying so: the simulated
        cloud resolves any NodeClass (selectors that match nothing get every zone), and has
        no AWS subnet, security group, AMI or instance profile to report, so those status
        fields are left as they are; ``spec.instanceProfile`` is reported as given. None
        for a NodeClass it does not know."""
        nc = self.node_classes.get(name)
        if nc is None:
            return None
        note = "simulated cloud: resolved without AWS; no IDs to report"
        parts = (
            ncs.SUBNETS_READY,
            ncs.SECURITY_GROUPS_READY,
            ncs.AMIS_READY,
            ncs.INSTANCE_PROFILE_READY,
            ncs.PLACEMENT_GROUP_READY,
        )
        conditions = ncs.with_validation({kind: ncs.ready(kind, note) for kind in parts})
        return ncs.NodeClassStatus(instance_profile=nc.instance_profile, conditions=conditions)

    def unresolved_terms(self, node_class: NodeClass) -> list[tuple[str, int, SelectorTerm]]:
        """Selector terms that match nothing: (field, index, term). Used to reject bad input."""
        return unresolved_terms(self.subnets, self.security_groups, node_class)

    def _node_class(self, name: str) -> NodeClass:
        nc = self.node_classes.get(name)
        if nc is None:
            raise NodeClassNotReadyError(f"NodeClass {name!r} does not exist")
        return nc

    # -- CloudProvider -------------------------------------------------------------------

    def get_instance_types(self, node_class: str) -> list[InstanceType]:
        """Every catalog type offered in the region, with offerings in the NodeClass's zones;
        offerings marked unavailable (ICE, recent interruption) have ``available=False``. With
        a market, Spot offerings carry their pool's price for the current price epoch; the
        reservations the NodeClass selects add ``reserved`` offerings (``_with_reserved``)."""
        return self._with_reserved(node_class, self._marked(node_class))

    def _with_reserved(self, node_class: str, types: list[InstanceType]) -> list[InstanceType]:
        if not self.reservations:
            return types
        nc = self._node_class(node_class)
        subnets, now = self.resolve_subnets(nc), self._clock.now()
        return nodeclass_types(
            types, self.reservations, nc, subnets, now, self.reservation_counts()
        )

    def reservation_counts(self) -> dict[str, int]:
        """Each reservation's free instances now (``reservations.free_counts``)."""
        return free_counts(self.reservations, (i.offering for i in self._instances.values()))

    def _marked(self, node_class: str) -> list[InstanceType]:
        types = self._priced_types(node_class)
        now = self._clock.now()
        marked = frozenset(k for k, until in self._unavailable.items() if until > now)
        if not marked:
            return types
        # The same marks give the same objects, so the scheduler's per-list caches hit.
        key = (node_class, id(types), marked)
        cached = self._marked_types.get(key)
        if cached is not None and cached[0] is types:
            return cached[1]
        names = {k[0] for k in marked}
        out = []
        for it in types:
            if it.name not in names:
                out.append(it)
                continue
            offerings = tuple(
                replace(o, available=False) if (it.name, o.zone, o.capacity_type) in marked else o
                for o in it.offerings
            )
            out.append(replace(it, offerings=offerings))
        if len(self._marked_types) >= 64:
            self._marked_types.clear()
        self._marked_types[key] = (types, out)
        return out

    def mark_unavailable(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        ttl_s: float = UNAVAILABLE_OFFERING_TTL_S,
    ) -> None:
        """Skip this offering for ``ttl_s`` (Karpenter's unavailable-offerings cache)."""
        key = (instance_type, zone, capacity_type)
        self._unavailable[key] = max(self._unavailable.get(key, 0.0), self._clock.now() + ttl_s)

    @property
    def reclaim_events(self) -> list[ReclaimEvent]:
        """Market pool events that took our instances, in time order."""
        return list(self._pools.events) if self._pools is not None else []

    def _priced_types(self, node_class: str) -> list[InstanceType]:
        base = self._base_types(node_class)
        if self.market is None:
            return base
        epoch = int(self._clock.now() // PRICE_EPOCH_S)
        key = (node_class, epoch)
        cached = self._priced.get(key)
        if cached is None:
            self._priced = {k: v for k, v in self._priced.items() if k[1] >= epoch}
            at = epoch * PRICE_EPOCH_S
            cached = [
                replace(
                    it,
                    offerings=tuple(
                        _repriced(o, self._spot_price(it, o, at))
                        if o.capacity_type == labels.CAPACITY_TYPE_SPOT and o.available
                        else o
                        for o in it.offerings
                    ),
                )
                if any(o.capacity_type == labels.CAPACITY_TYPE_SPOT for o in it.offerings)
                else it
                for it in base
            ]
            self._priced[key] = cached
        return cached

    def _spot_price(self, it: InstanceType, o: Offering, at_s: float) -> float:
        """The pool's price at ``at_s`` (the market's, around the catalog's regional price)."""
        assert self.market is not None
        regional = self._regional.get(it.name)
        if regional is None:
            quote = self.catalog.spot_quote(self.region, it.name)
            od = self.catalog.on_demand_price(self.region, it.name)
            regional = (
                spot_price(od.price_per_hour, quote.savings_pct)
                if quote is not None and od is not None
                else o.price_per_hour
            )
            self._regional[it.name] = regional
        return self.market.price((it.name, o.zone), regional, at_s)[0]

    def _base_types(self, node_class: str) -> list[InstanceType]:
        cached = self._types.get(node_class)
        if cached is not None:
            return cached
        nc = self._node_class(node_class)
        subnets = self.resolve_subnets(nc)
        if not subnets:
            raise NodeClassNotReadyError(f"NodeClass {node_class!r} resolves to no subnet")
        if not self.resolve_security_groups(nc):
            raise NodeClassNotReadyError(f"NodeClass {node_class!r} resolves to no security group")
        zones = sorted({(s.zone, s.zone_id) for s in subnets})
        types = build_instance_types(
            self.catalog,
            self.region,
            zones,
            kubelet=nc.kubelet,
            ami_family=nc.ami_family,
            root_volume_bytes=nc.root_volume_bytes,
            instance_store_policy=nc.instance_store_policy,
        )
        self._types[node_class] = types
        return types

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance; see the module docstring for the choice of offering.

        Raises:
            NodeClassNotReadyError: the NodeClass does not resolve.
            InsufficientCapacityError: no allowed offering is available.
        """
        nc = self._node_class(request.node_class)
        reqs = request.requirements
        free = self.reservation_counts() if self.reservations else {}
        candidates: list[tuple[InstanceType, Offering]] = [
            (it, o)
            for it in request.instance_types
            for o in it.offerings
            if o.available
            and o.compatible(reqs)
            and (not o.reservation_id or free.get(o.reservation_id, 0) > 0)
        ]
        if not candidates:
            raise InsufficientCapacityError(
                f"no available offering for nodeclaim {request.nodeclaim_name} "
                f"({len(request.instance_types)} instance types)"
            )
        blocked = self._launch_failures.blocked(self._clock.now(), self._rng)
        if blocked is not None:
            kept = [(it, o) for it, o in candidates if blocked and o.zone not in blocked]
            for it, o in candidates:
                if (it, o) not in kept:
                    self.mark_unavailable(it.name, o.zone, o.capacity_type)
            if not kept:
                raise InsufficientCapacityError(
                    f"InsufficientInstanceCapacity for nodeclaim {request.nodeclaim_name} "
                    "(injected fault)"
                )
            candidates = kept
        allocation: Allocation | None = None
        if self.market is None:
            it, offering = choose_offering(candidates, reqs)
        else:
            it, offering, allocation = self._fleet(request, nc, candidates)
        subnet = next((s for s in self.resolve_subnets(nc) if s.zone == offering.zone), None)
        if subnet is None:
            raise CreateError("NoSubnet", f"no subnet of {nc.name} in zone {offering.zone}")
        self.launch_templates.use(
            nc.name, [nodeclass_hash(nc), request.nodepool, it.label(labels.ARCH)]
        )
        instance_id = "i-" + "".join(self._rng.choice("0123456789abcdef") for _ in range(17))
        instance = Instance(
            provider_id=self.provider_id(offering.zone, instance_id),
            instance_id=instance_id,
            instance_type=it,
            offering=offering,
            subnet_id=subnet.id,
            launched_at_s=self._clock.now(),
            tags=(
                *nc.tags,
                *request.tags,
                (NODECLASS_TAG, nc.name),
                (NODECLASS_HASH_TAG, nodeclass_hash(nc)),
            ),
            allocation=allocation,
        )
        self._instances[instance.provider_id] = instance
        if offering.capacity_type == labels.CAPACITY_TYPE_SPOT and self._pools is not None:
            self._pools.add(instance)
        return instance

    def provider_id(self, zone: str, instance_id: str) -> str:
        """The Node ``spec.providerID`` of an instance: ``aws:///<zone>/<instance id>``."""
        return f"aws:///{zone}/{instance_id}"

    # -- the Spot market ------------------------------------------------------------------

    def _fleet(
        self,
        request: LaunchRequest,
        nc: NodeClass,
        candidates: list[tuple[InstanceType, Offering]],
    ) -> tuple[InstanceType, Offering, Allocation]:
        """One CreateFleet request over the market (module docstring).

        Raises:
            InsufficientCapacityError: every pool the strategy reached is dry (those
                offerings are marked unavailable).
        """
        assert self.market is not None and self._pools is not None
        zones = {s.zone for s in self.resolve_subnets(nc)}
        now = self._clock.now()
        #: Spot pool prices of this request, asked for by the filters and the quotes alike
        #: (a pool's price at ``now`` depends on its type name and zone alone).
        pool_prices: dict[tuple[str, str], float] = {}

        def pool_price(it: InstanceType, o: Offering) -> float:
            key = (it.name, o.zone)
            found = pool_prices.get(key)
            if found is None:
                found = pool_prices[key] = self._spot_price(it, o, now)
            return found

        def ranked_price(it: InstanceType, o: Offering) -> float:
            """The price the request ranks by: a Spot pool's price now, unless a NodeOverlay
            priced the offering (Karpenter-AWS ranks by the overlaid price)."""
            if o.capacity_type == labels.CAPACITY_TYPE_SPOT and o.catalog_price_per_hour is None:
                return pool_price(it, o)
            return o.price_per_hour

        kept = launch_candidates(
            [(it, o) for it, o in candidates if o.zone in zones],
            request.requirements,
            price=ranked_price,
        )
        capacity_type = choose_capacity_type(kept, request.requirements)
        if capacity_type is None:
            raise InsufficientCapacityError(
                f"no available offering for nodeclaim {request.nodeclaim_name} in the subnets "
                f"of {nc.name}"
            )
        spot = capacity_type == labels.CAPACITY_TYPE_SPOT
        priced = [
            (it, o, ranked_price(it, o)) for it, o in kept if o.capacity_type == capacity_type
        ]
        order = {it.name: i for i, it in enumerate(request.instance_types)}
        quotes = []
        for it, o, price in priced:
            pool = (it.name, o.zone)
            score = 10.0
            if spot:
                bucket = self._bucket(it.name)
                rate = self.market.settings.rate(o, it.name)
                score = self.market.capacity_score(
                    pool, bucket, rate, now, self._pools.in_use(pool)
                )
            quotes.append(
                PoolQuote(
                    instance_type=it,
                    offering=_launched_offering(o, price, pool_price(it, o) if spot else None),
                    price_per_hour=price,
                    capacity_score=score,
                    # Karpenter-AWS (pkg/providers/instance/instance.go getOverrides): with a
                    # NodeOverlay's price, an override's priority is the overlaid price.
                    priority=o.price_per_hour
                    if request.priority_by_price
                    else order.get(it.name, len(order)),
                    tiebreak=self.market.tiebreak(pool, capacity_type),
                )
            )
        strategy = (
            request.spot_allocation_strategy if spot else request.on_demand_allocation_strategy
        )
        result = allocate(strategy, quotes)
        for q in result.errors:
            self.mark_unavailable(q.instance_type.name, q.offering.zone, capacity_type)
        if result.chosen is None:
            raise InsufficientCapacityError(
                f"InsufficientInstanceCapacity for nodeclaim {request.nodeclaim_name}: "
                f"{result.reason}",
                [(q.instance_type.name, q.offering) for q in result.errors],
            )
        q = result.chosen
        allocation = Allocation(
            strategy=strategy,
            price_per_hour=q.offering.cost_per_hour,
            capacity_score=q.capacity_score if spot else None,
            pools=len(quotes),
            reason=result.reason,
        )
        return q.instance_type, q.offering, allocation

    def _bucket(self, instance_type: str) -> int:
        quote = self.catalog.spot_quote(self.region, instance_type)
        return quote.interruption_bucket if quote is not None else 4

    def adopt(
        self,
        instance_type: InstanceType,
        zone: str,
        capacity_type: str,
        instance_id: str,
        *,
        tags: tuple[tuple[str, str], ...] = (),
    ) -> Instance:
        """Take over an instance that already runs (a Node of the starting cluster); a spot
        one is subject to its pool's reclaims from now on.

        Raises:
            CreateError: the type has no offering in that zone and capacity type.
        """
        offering = next(
            (
                o
                for o in instance_type.offerings
                if o.zone == zone and o.capacity_type == capacity_type
            ),
            None,
        )
        if offering is None:
            raise CreateError(
                "NoOffering", f"{instance_type.name} has no {capacity_type} offering in {zone}"
            )
        subnet = next((s for s in self.subnets if s.zone == zone), None)
        instance = Instance(
            provider_id=self.provider_id(zone, instance_id),
            instance_id=instance_id,
            instance_type=instance_type,
            offering=offering,
            subnet_id=subnet.id if subnet else "",
            launched_at_s=self._clock.now(),
            tags=tags,
        )
        self._instances[instance.provider_id] = instance
        if capacity_type == labels.CAPACITY_TYPE_SPOT and self._pools is not None:
            self._pools.add(instance)
        return instance

    def add_launch_failures(
        self, zones: frozenset[str] | None, percentage: int, until_s: float
    ) -> None:
        """Until ``until_s``, ``percentage`` % of launches fail with ICE in ``zones`` (None:
        every zone); see ``launchfaults.LaunchFailures``."""
        self._launch_failures.add(zones, percentage, until_s)

    def inject(self, event: CloudEvent) -> None:
        """Deliver an event now (a captured EventBridge message, or a test), with what EC2
        then does: a Spot interruption warning (terminate, stop or hibernate) takes the
        instance 2 minutes later; shutting-down 5 s later, stopping 30 s later; stopped and
        terminated at once."""
        delay: float | None = None
        if event.kind == SPOT_INTERRUPTION:
            delay = NOTICE_S
        elif event.kind == STATE_CHANGE:
            delay = {"shutting-down": 5.0, "stopping": 30.0, "stopped": 0.0, "terminated": 0.0}.get(
                event.state or ""
            )
        targets = [self.instance_by_id(iid) for iid in event.instance_ids]
        self._emit(event)
        if delay is None:
            return
        for inst in targets:
            if inst is not None:
                self._clock.after(delay, partial(self.reclaim, inst.provider_id), label="reclaim")

    def _emit(self, event: CloudEvent) -> None:
        if not any(inst.instance_id in event.instance_ids for inst in self._instances.values()):
            return  # the instance is already gone
        for listener in self.event_listeners:
            listener(event)

    def reclaim(self, provider_id: str) -> None:
        """EC2 takes the instance back: it is gone now, whatever ran on it."""
        instance = self._instances.pop(provider_id, None)
        if instance is None:
            return
        if self._pools is not None:
            self._pools.remove(instance)
        for reclaimed in self.reclaim_listeners:
            reclaimed(instance)
        for heard in self.event_listeners:
            heard(
                CloudEvent(
                    STATE_CHANGE,
                    (instance.instance_id,),
                    f"terminated-{instance.instance_id}",
                    state="terminated",
                )
            )

    def instance_by_id(self, instance_id: str) -> Instance | None:
        """The running instance with this EC2 id, if any."""
        return next((i for i in self._instances.values() if i.instance_id == instance_id), None)

    def delete(self, provider_id: str) -> None:
        """Terminate; raises ``NodeClaimNotFoundError`` once the instance is gone."""
        instance = self._instances.pop(provider_id, None)
        if instance is None:
            raise NodeClaimNotFoundError(provider_id)
        if self._pools is not None:
            self._pools.remove(instance)

    def get(self, provider_id: str) -> Instance:
        """The running instance; raises ``NodeClaimNotFoundError`` when gone."""
        found = self._instances.get(provider_id)
        if found is None:
            raise NodeClaimNotFoundError(provider_id)
        return found

    def is_drifted(self, provider_id: str) -> str:
        """``NodeClassDrift`` when a field of the NodeClass's static drift hash changed since
        launch (``nodeclass_drift``), ``SubnetDrift`` when the instance's subnet is no longer
        one its NodeClass selects, else ``""`` (the simulated cloud has no AMIs or security
        groups on instances).

        Raises:
            NodeClaimNotFoundError: the instance is gone.
        """
        inst = self.get(provider_id)
        nc_name = dict(inst.tags).get(NODECLASS_TAG)
        nc = self.node_classes.get(nc_name) if nc_name else None
        if nc is None:
            return ""
        static = static_drift(dict(inst.tags).get(NODECLASS_HASH_TAG), nc)
        if static or not inst.subnet_id:
            return static
        if inst.subnet_id not in {s.id for s in self.resolve_subnets(nc)}:
            return "SubnetDrift"
        return ""

    def list(self) -> list[Instance]:
        """Running instances by provider id."""
        return [self._instances[k] for k in sorted(self._instances)]


def _launched_offering(o: Offering, price_per_hour: float, pool_price: float | None) -> Offering:
    """The offering an instance launches with: priced as the request ranked it
    (``price_per_hour``), and billed at the Spot pool's price now (``pool_price``, None for
    other capacity types) when a NodeOverlay priced it differently."""
    if o.catalog_price_per_hour is not None and pool_price is not None:
        return replace(o, catalog_price_per_hour=pool_price)
    return replace(o, price_per_hour=price_per_hour)


def _repriced(o: Offering, price_per_hour: float) -> Offering:
    """``dataclasses.replace(o, price_per_hour=...)``, spelled out: repricing a broad
    NodePool's Spot offerings each price epoch builds tens of thousands of them."""
    return Offering(
        o.zone,
        o.zone_id,
        o.capacity_type,
        price_per_hour,
        o.available,
        o.interruption_rate_per_hour,
        o.price_estimated,
    )

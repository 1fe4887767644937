"""Simulated cloud launch rules: spot first, spot filter, price then hazard then name then zone."""

from __future__ import annotations

import random

import pytest

from joiner.api import labels
from joiner.api.objects import NodeClass, SelectorTerm, Source
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.simulated.fleet import PCO_CAPACITY_BAND
from joiner.cloudprovider.types import (
    InsufficientCapacityError,
    LaunchRequest,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    SecurityGroup,
    Subnet,
)
from joiner.sim.clock import SimClock
from joiner.testing.builders import GIB, make_instance_type

NC = NodeClass(
    name="default",
    source=Source("t.yaml", "EC2NodeClass", "default"),
    subnet_selector_terms=(SelectorTerm(id="subnet-a"), SelectorTerm(id="subnet-b")),
    security_group_selector_terms=(SelectorTerm(tags=(("team", "*"),)),),
    tags=(("Name", "my-node"),),
)


@pytest.fixture
def cloud():
    return SimulatedCloudProvider(
        Catalog.load(),
        "us-east-1",
        SimClock(),
        random.Random(1),
        subnets=[
            Subnet("subnet-a", "us-east-1a", "use1-az1"),
            Subnet("subnet-b", "us-east-1b", "use1-az2"),
        ],
        security_groups=[SecurityGroup("sg-1", tags=(("team", "x"),))],
        node_classes=[NC],
    )


def _request(types, *reqs):
    return LaunchRequest("nc-1", "default", "default", Requirements(reqs), tuple(types))


def test_spot_before_on_demand_and_cheapest_wins(cloud):
    a = make_instance_type(
        "a.large",
        cpu_m=2000,
        memory=GIB,
        prices={
            ("us-east-1a", "on-demand"): 0.10,
            ("us-east-1a", "spot"): 0.05,
            ("us-east-1b", "spot"): 0.04,
        },
    )
    inst = cloud.create(_request([a]))
    assert (inst.offering.capacity_type, inst.offering.zone) == ("spot", "us-east-1b")
    assert inst.subnet_id == "subnet-b"
    assert ("Name", "my-node") in inst.tags
    assert cloud.get(inst.provider_id) == inst


def test_on_demand_when_spot_not_allowed(cloud):
    a = make_instance_type("a.large", cpu_m=2000, memory=GIB)
    inst = cloud.create(_request([a], Requirement.in_(labels.CAPACITY_TYPE, "on-demand")))
    assert inst.offering.capacity_type == "on-demand"


def _small_and_big(small_spot_price):
    """b.large (0.05 on demand) and c.2xlarge (0.06 on Spot, above b.large on demand)."""
    small = make_instance_type(
        "b.large",
        cpu_m=2000,
        memory=GIB,
        prices={("us-east-1a", "on-demand"): 0.05, ("us-east-1a", "spot"): small_spot_price},
    )
    big = make_instance_type(
        "c.2xlarge",
        cpu_m=8000,
        memory=GIB,
        prices={("us-east-1a", "on-demand"): 0.40, ("us-east-1a", "spot"): 0.06},
    )
    return [big, small]


def test_types_pricier_than_cheapest_on_demand_are_dropped(cloud):
    inst = cloud.create(_request(_small_and_big(0.04)))
    # c.2xlarge's Spot offering (0.06) costs more than b.large on-demand (0.05), so
    # Karpenter's SpotInstanceFilter drops the type; spot is still preferred, on b.large.
    assert (inst.instance_type.name, inst.offering.capacity_type) == ("b.large", "spot")


def test_every_type_dearer_on_spot_than_the_cheapest_on_demand_is_ice(cloud):
    # Both types have a Spot offering above 0.05: Karpenter's filter rejects both and the
    # launch fails ("all requested instance types were unavailable during launch").
    with pytest.raises(InsufficientCapacityError, match="unavailable during launch"):
        cloud.create(_request(_small_and_big(0.09)))


def test_ties_break_on_interruption_rate_then_name_then_zone(cloud):
    prices = {("us-east-1a", "spot"): 0.05, ("us-east-1b", "spot"): 0.05}
    risky = make_instance_type(
        "a.large", cpu_m=2000, memory=GIB, prices=prices, interruption_rate_per_hour=0.001
    )
    calm = make_instance_type(
        "z.large", cpu_m=2000, memory=GIB, prices=prices, interruption_rate_per_hour=0.0001
    )
    twin = make_instance_type(
        "y.large", cpu_m=2000, memory=GIB, prices=prices, interruption_rate_per_hour=0.0001
    )
    inst = cloud.create(_request([risky, calm, twin]))
    assert (inst.instance_type.name, inst.offering.zone) == ("y.large", "us-east-1a")


def test_zone_requirement_is_respected(cloud):
    a = make_instance_type(
        "a.large",
        cpu_m=2000,
        memory=GIB,
        prices={("us-east-1a", "spot"): 0.01, ("us-east-1b", "spot"): 0.02},
    )
    inst = cloud.create(_request([a], Requirement.in_(labels.ZONE, "us-east-1b")))
    assert inst.offering.zone == "us-east-1b"


def test_no_offering_is_insufficient_capacity(cloud):
    a = make_instance_type("a.large", cpu_m=2000, memory=GIB)
    with pytest.raises(InsufficientCapacityError):
        cloud.create(_request([a], Requirement.in_(labels.ZONE, "us-east-1c")))


def test_delete_then_not_found(cloud):
    inst = cloud.create(_request([make_instance_type("a.large", cpu_m=2000, memory=GIB)]))
    cloud.delete(inst.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        cloud.delete(inst.provider_id)
    assert cloud.list() == []


def test_launch_templates_kept_as_karpenter_aws_keeps_them(cloud):
    """One template per content, reused while used, deleted a TTL (60 s) after its last use
    when the next launch comes, and all of a NodeClass's deleted with it."""
    clock = cloud._clock
    small = [make_instance_type("a.large", cpu_m=2000, memory=GIB)]
    cloud.create(_request(small))
    (name,) = cloud.launch_templates.templates
    clock.run_until(59)
    cloud.create(_request(small))
    assert cloud.launch_templates.created == 1
    clock.run_until(119)
    assert cloud.launch_templates.collect() == [name]
    assert cloud.launch_templates.templates == {}
    cloud.create(_request(small))
    assert list(cloud.launch_templates.templates) == [name]
    assert cloud.launch_templates.created == 2
    cloud.set_node_classes([])
    assert cloud.launch_templates.templates == {}
    assert cloud.launch_templates.deleted == 2


def test_instance_types_cover_nodeclass_zones_only(cloud):
    types = {t.name: t for t in cloud.get_instance_types("default")}
    zones = {o.zone for o in types["c5.xlarge"].offerings}
    assert zones == {"us-east-1a", "us-east-1b"}
    with pytest.raises(NodeClassNotReadyError):
        cloud.get_instance_types("absent")


# -- with the Spot market ------------------------------------------------------------------


def _market_cloud(
    seed: int = 7, multiplier: float = 1.0
) -> tuple[SimulatedCloudProvider, SimClock]:
    from joiner.cloudprovider.simulated.market import HazardModel, SpotMarket

    clock = SimClock()
    cloud = SimulatedCloudProvider(
        Catalog.load(),
        "us-east-1",
        clock,
        random.Random(1),
        subnets=[
            Subnet("subnet-a", "us-east-1a", "use1-az6"),
            Subnet("subnet-b", "us-east-1b", "use1-az1"),
        ],
        security_groups=[SecurityGroup("sg-1", tags=(("team", "x"),))],
        node_classes=[NC],
        market=SpotMarket(seed, HazardModel(multiplier=multiplier)),
    )
    return cloud, clock


@pytest.mark.parametrize(
    "strategy", ["price-capacity-optimized", "capacity-optimized", "lowest-price"]
)
def test_the_requests_spot_strategy_picks_the_pool(strategy: str) -> None:
    cloud, _ = _market_cloud()
    names = ("c5.xlarge", "m5.xlarge", "c6i.xlarge", "m6i.xlarge", "r5.xlarge")
    types = [t for t in cloud.get_instance_types("default") if t.name in names]
    request = LaunchRequest(
        "nc-1",
        "default",
        "default",
        Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot")]),
        tuple(types),
        spot_allocation_strategy=strategy,
    )
    inst = cloud.create(request)
    a = inst.allocation
    assert a is not None and a.strategy == strategy and a.pools == 10
    quotes = [
        (o.price_per_hour, cloud.market.base_score((t.name, o.zone), cloud._bucket(t.name))[0])
        for t in types
        for o in t.offerings
        if o.capacity_type == "spot" and o.available
    ]
    best_score = max(s for _, s in quotes)
    if strategy == "lowest-price":
        assert a.price_per_hour == min(p for p, _ in quotes)
    elif strategy == "capacity-optimized":
        assert a.capacity_score == best_score
    else:
        band = [p for p, s in quotes if s >= best_score - PCO_CAPACITY_BAND]
        assert a.price_per_hour == min(band)
    assert inst.offering.price_per_hour == a.price_per_hour


def test_a_dry_pool_answers_ice_and_the_offering_is_marked() -> None:
    cloud, clock = _market_cloud(multiplier=1000.0)  # the pool's first crunch comes soon
    (c5,) = [t for t in cloud.get_instance_types("default") if t.name == "c5.xlarge"]
    spot = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot")])
    first = cloud.create(_request([c5], *spot.values()))
    pool = (c5.name, first.offering.zone)
    rate = cloud.market.settings.rate(first.offering, c5.name)
    event = cloud.market.next_event(pool, rate, 0.0)
    assert event is not None and event.notice_at_s < 48 * 3600.0
    clock.run_until(event.notice_at_s + 1.0)
    assert cloud.market.is_dry(pool, rate, clock.now())
    # Only this pool is allowed: lowest-price reaches it, gets ICE, and it is marked.
    only = Requirements([*spot.values(), Requirement.in_(labels.ZONE, first.offering.zone)])
    request = LaunchRequest(
        "nc-2", "default", "default", only, (c5,), spot_allocation_strategy="lowest-price"
    )
    with pytest.raises(InsufficientCapacityError, match="dry"):
        cloud.create(request)
    marked = next(t for t in cloud.get_instance_types("default") if t.name == "c5.xlarge")
    assert not any(
        o.available for o in marked.offerings if (o.zone, o.capacity_type) == (pool[1], "spot")
    )

"""The Spot market model alone: calibration per Spot Advisor bucket, pool events, prices,
capacity scores and EC2 Fleet's allocation strategies."""

from __future__ import annotations

import itertools

import pytest

from joiner.api.requirements import Requirements
from joiner.cloudprovider.catalog import HOURS_PER_MONTH, interruption_rate_per_hour
from joiner.cloudprovider.simulated.fleet import PoolQuote, allocate
from joiner.cloudprovider.simulated.market import (
    NOTICE_S,
    PRICE_EPOCH_S,
    HazardModel,
    MarketInputs,
    RateOverride,
    SpotMarket,
)
from joiner.cloudprovider.types import InstanceType, Offering

#: The issue's calibration targets: monthly share of instances reclaimed per bucket.
TARGETS = (0.025, 0.075, 0.125, 0.175, 0.25)
MONTH_S = HOURS_PER_MONTH * 3600.0


def _reclaimed_share(market: SpotMarket, rate: float, pools: int, per_pool: int, months: int):
    """Over ``pools`` pools with ``per_pool`` instances each, for ``months`` months: the share
    of the instances running at a month's start that a pool event reclaims within it (fresh
    instances each month, as a month's survivors and replacements would be)."""
    reclaimed = 0
    for p in range(pools):
        pool = (f"t{p}.large", "zone-a")
        events = market.events_until(pool, rate, months * MONTH_S)
        for m in range(months):
            start, end = m * MONTH_S, (m + 1) * MONTH_S
            month_events = [e for e in events if start <= e.notice_at_s < end]
            for j in range(per_pool):
                iid = f"i-{p}-{m}-{j}"
                if any(market.is_victim(pool, e, iid) for e in month_events):
                    reclaimed += 1
    return reclaimed / (pools * per_pool * months)


@pytest.mark.parametrize("bucket", range(5))
def test_monthly_share_reclaimed_matches_the_spot_advisor_bucket(bucket: int) -> None:
    """48,000 instance-months per bucket, within +-20% (relative) of the target."""
    market = SpotMarket(seed=12345)
    rate = interruption_rate_per_hour(bucket)
    share = _reclaimed_share(market, rate, pools=400, per_pool=10, months=12)
    assert share == pytest.approx(TARGETS[bucket], rel=0.20)


def test_reclaims_come_several_at_a_time_from_one_pool() -> None:
    market = SpotMarket(seed=1)
    pool = ("c5.xlarge", "us-east-1a")
    events = market.events_until(pool, interruption_rate_per_hour(4), 120 * MONTH_S)
    assert len(events) > 20
    taken = [sum(market.is_victim(pool, e, f"i-{k}") for k in range(8)) for e in events]
    assert max(taken) >= 6, "a crunch takes most of a pool"
    assert sum(1 for t in taken if t >= 3) >= len(taken) // 2


def test_rebalance_share_notice_and_dry_spell_follow_the_settings() -> None:
    market = SpotMarket(seed=2, settings=HazardModel(rebalance_probability=0.8))
    pool = ("m5.large", "us-east-1b")
    events = market.events_until(pool, 0.5, 1000 * 3600.0)
    assert len(events) > 300
    share = sum(e.rebalance for e in events) / len(events)
    assert share == pytest.approx(0.8, abs=0.06)
    for e in events:
        assert e.reclaim_at_s - e.notice_at_s == NOTICE_S
        assert e.notice_at_s - 780.0 <= e.rebalance_at_s <= e.notice_at_s
        assert market.is_dry(pool, 0.5, e.notice_at_s)
        assert e.dry_until_s - e.notice_at_s >= 300.0


def test_multiplier_and_overrides_scale_the_crunch_rate() -> None:
    offering = Offering("z", "z-id", "spot", 0.1, interruption_rate_per_hour=1e-4)
    assert HazardModel(multiplier=3.0).rate(offering, "a.large") == pytest.approx(3e-4)
    model = HazardModel(overrides=(RateOverride(0.5, instance_type="a.large"),))
    assert model.rate(offering, "a.large") == 0.5
    assert model.rate(offering, "b.large") == pytest.approx(1e-4)
    market = SpotMarket(seed=3)
    slow = market.events_until(("a", "z"), 1e-3, 2000 * 3600.0)
    fast = SpotMarket(seed=3).events_until(("a", "z"), 1e-2, 2000 * 3600.0)
    assert len(fast) > 5 * len(slow)


def test_the_market_is_a_function_of_seed_pool_and_time_not_of_query_order() -> None:
    a, b = SpotMarket(seed=9), SpotMarket(seed=9)
    pools = [("c5.xlarge", z) for z in ("us-east-1a", "us-east-1b", "us-east-1c")]
    first = [a.price(p, 0.07, 50 * 3600.0) for p in pools]
    b.price(pools[2], 0.07, 200 * 3600.0)
    assert [b.price(p, 0.07, 50 * 3600.0) for p in pools] == first
    # Zones differ in price and in capacity score: nothing ties by name.
    prices = {p[1]: a.price(p, 0.07, 0.0)[0] for p in pools}
    assert len(set(prices.values())) == 3
    assert len({a.base_score(p, 0)[0] for p in pools}) == 3
    assert SpotMarket(seed=10).price(pools[0], 0.07, 0.0) != a.price(pools[0], 0.07, 0.0)


def test_prices_drift_slowly_around_the_regional_price() -> None:
    market = SpotMarket(seed=4)
    series = [market.price(("m5.large", "z"), 0.04, k * 6 * 3600.0)[0] for k in range(400)]
    assert all(0.025 < p < 0.065 for p in series)
    steps = [abs(b / a - 1) for a, b in itertools.pairwise(series)]
    assert max(steps) < 0.15
    assert len(set(series)) > 300


def test_user_inputs_are_used_as_given() -> None:
    inputs = MarketInputs(
        prices={("c5.xlarge", "us-east-1a"): ((0.0, 0.05), (3600.0, 0.06))},
        scores={("c5.xlarge", "us-east-1a"): 3.0, ("*", "us-east-1b"): 9.0},
    )
    m = SpotMarket(seed=5, inputs=inputs)
    assert m.price(("c5.xlarge", "us-east-1a"), 0.07, -10.0) == (0.05, True)
    assert m.price(("c5.xlarge", "us-east-1a"), 0.07, 3599.0) == (0.05, True)
    assert m.price(("c5.xlarge", "us-east-1a"), 0.07, 7200.0) == (0.06, True)
    assert m.price(("c5.xlarge", "us-east-1b"), 0.07, 0.0)[1] is False
    assert m.base_score(("c5.xlarge", "us-east-1a"), 0) == (3.0, True)
    assert m.base_score(("m5.large", "us-east-1b"), 4) == (9.0, True)


# -- allocation strategies ----------------------------------------------------------------


def _quote(name: str, zone: str, price: float, score: float, priority: int = 0) -> PoolQuote:
    it = InstanceType(name, Requirements(), {}, {}, {}, ())
    return PoolQuote(it, Offering(zone, zone, "spot", price), price, score, priority, 0.5)


POOLS = [
    _quote("a.large", "z1", 0.050, 4.0, 2),  # cheapest, shallow
    _quote("b.large", "z1", 0.060, 8.2, 0),  # deep, mid price, first priority
    _quote("c.large", "z2", 0.058, 7.5, 1),  # in the best-capacity band, cheaper than b
    _quote("d.large", "z2", 0.070, 9.0, 3),  # deepest, dearest
]


def test_price_capacity_optimized_takes_the_cheapest_pool_of_the_best_capacity() -> None:
    got = allocate("price-capacity-optimized", POOLS)
    # d scores 9.0; the band (PCO_CAPACITY_BAND = 2) holds b, c and d; c is the cheapest.
    assert got.chosen is not None and got.chosen.pool == "c.large/z2"
    assert "4 pools" in got.reason or "offered 4" in got.reason


def test_capacity_optimized_lowest_price_and_prioritized() -> None:
    assert allocate("capacity-optimized", POOLS).chosen.pool == "d.large/z2"  # type: ignore[union-attr]
    assert allocate("lowest-price", POOLS).chosen.pool == "a.large/z1"  # type: ignore[union-attr]
    assert allocate("prioritized", POOLS).chosen.pool == "b.large/z1"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        allocate("diversified", POOLS)


def test_dry_pools_answer_ice_only_when_the_strategy_reaches_them() -> None:
    dry_cheap = _quote("a.large", "z1", 0.01, 0.0)
    pools = [dry_cheap, *POOLS[1:]]
    lowest = allocate("lowest-price", pools)
    assert [q.pool for q in lowest.errors] == ["a.large/z1"]
    assert lowest.chosen is not None and lowest.chosen.pool == "c.large/z2"
    pco = allocate("price-capacity-optimized", pools)
    assert pco.errors == () and pco.chosen is not None
    all_dry = allocate("price-capacity-optimized", [dry_cheap, _quote("b", "z2", 0.02, 0.0)])
    assert all_dry.chosen is None and len(all_dry.errors) == 2


def test_memoised_zone_offset_gives_the_prices_of_a_fresh_market() -> None:
    """A pool's zone offset is drawn once and kept; every later price equals the one a
    fresh market (drawing it anew) gives at the same instant."""
    used = SpotMarket(seed=77)
    pools = [("m5.large", "us-east-1a"), ("m5.large", "us-east-1b"), ("c6g.xlarge", "us-east-1a")]
    for at_s in (0.0, PRICE_EPOCH_S * 3.5, 0.0, PRICE_EPOCH_S * 9):
        for pool in pools:
            assert used.price(pool, 0.1, at_s) == SpotMarket(seed=77).price(pool, 0.1, at_s)
